"""Start-up warm-up: what the first turn needs is loaded before open_services yields."""

from __future__ import annotations

import logging

import pytest

from bot.chat.engine import TurnRequest
from bot.chat.warmup import warm_up
from bot.llm.backend import ChatBackend
from bot.llm.gateway import default_backend_factory
from bot.llm.ollama_backend import OllamaBackend
from bot.services import ServiceOptions, open_services
from bot.turn.events import DoneEvent
from tests.conftest import FAST_RETRY, LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text


class CountingFactory:
    """The default backend factory, counting the backends it builds."""

    def __init__(self) -> None:
        self.built: list[str] = []

    def __call__(self, kind: str, base: str, timeout: float, key: str) -> ChatBackend:
        self.built.append(kind)
        return default_backend_factory(kind, base, timeout, key)


async def test_start_up_loads_the_analyzer_and_the_chat_backend(
    make_settings: SettingsFactory, llm: FakeLLMServer
) -> None:
    factory = CountingFactory()
    options = ServiceOptions(retry=FAST_RETRY, builtin_tools=False, backend_factory=factory)
    async with open_services(make_settings("ollama"), options) as services:
        assert services.analyzer.loaded
        assert factory.built == ["ollama"]
        llm.script(Text("hello there"))
        events = [
            event async for event in services.engine.run_turn(TurnRequest("hi", space_id=LOCAL))
        ]
        assert isinstance(events[-1], DoneEvent)
        assert factory.built == ["ollama"]  # the turn used the backend built at start-up


async def test_without_warm_start_nothing_is_loaded_ahead(make_settings: SettingsFactory) -> None:
    factory = CountingFactory()
    options = ServiceOptions(
        retry=FAST_RETRY, builtin_tools=False, backend_factory=factory, warm_start=False
    )
    async with open_services(make_settings("ollama"), options) as services:
        assert not services.analyzer.loaded
        assert factory.built == []


async def test_a_failing_warm_up_is_logged_and_start_up_goes_on(
    make_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(kind: str, base: str, timeout: float, key: str) -> ChatBackend:
        raise RuntimeError("no backend today")

    options = ServiceOptions(retry=FAST_RETRY, builtin_tools=False, backend_factory=broken)
    with caplog.at_level(logging.WARNING, logger="bot.chat.warmup"):
        async with open_services(make_settings("ollama"), options) as services:
            assert services.analyzer.loaded
    assert any("warming up llm failed" in r.getMessage() for r in caplog.records)


async def test_warm_up_runs_every_part_even_when_one_fails() -> None:
    class Part:
        def __init__(self, fail: bool) -> None:
            self.fail = fail
            self.ran = False

        async def warm_up(self) -> None:
            self.ran = True
            if self.fail:
                raise OSError("disk gone")

    parts = {"a": Part(fail=True), "b": Part(fail=False)}
    await warm_up(dict(parts), "en")
    assert parts["a"].ran and parts["b"].ran


def test_ollama_backend_warm_up_needs_no_server() -> None:
    OllamaBackend("http://127.0.0.1:9", timeout=1.0).warm_up()
