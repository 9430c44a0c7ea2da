"""The event loop choice (`bot.runtime.event_loop`): uvloop where it is installed, asyncio's loop
when told or where it is missing, and a clear refusal when uvloop is demanded but absent."""

from __future__ import annotations

import asyncio
import sys

import pytest

from bot.errors import StartupError
from bot.runtime import event_loop


async def _running_loop_name() -> str:
    return event_loop.loop_name(asyncio.get_running_loop())


def test_auto_and_uvloop_run_on_uvloop_where_it_is_installed() -> None:
    pytest.importorskip("uvloop")
    assert event_loop.run(_running_loop_name()) == "uvloop"
    assert event_loop.run(_running_loop_name(), "uvloop") == "uvloop"


def test_asyncio_runs_on_asyncios_own_loop() -> None:
    assert event_loop.loop_factory("asyncio") is None
    assert event_loop.run(_running_loop_name(), "asyncio") == "asyncio"


def test_without_uvloop_auto_falls_back_and_uvloop_is_refused_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    assert event_loop.loop_factory("auto") is None
    assert event_loop.run(_running_loop_name()) == "asyncio"
    with pytest.raises(StartupError, match=r"EVENT_LOOP=uvloop.*EVENT_LOOP=auto"):
        event_loop.loop_factory("uvloop")


async def test_the_suites_async_tests_run_on_the_products_loop() -> None:
    expected = "uvloop" if event_loop.loop_factory() is not None else "asyncio"
    assert await _running_loop_name() == expected
