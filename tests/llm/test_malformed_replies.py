"""Replies that are not the model protocol are logged, typed errors naming the cause.

A wrong LLM_API_BASE (a web server's page, a login page), a broken line mid-stream or a tool call
whose arguments are not JSON: the real clients (ollama, LiteLLM) against the loopback LLM.
"""

from __future__ import annotations

import logging

import pytest

from bot.chat.engine import TurnRequest
from bot.errors import LLMError
from bot.llm.backend import BackendError, ModelErrorKind
from bot.services import Services
from bot.store.repos.api_logs import ApiLog, ApiLogFilter
from bot.store.repos.messages import FAILED_TURN_ROLE
from bot.turn.events import ChunkEvent, DoneEvent, ErrorEvent, Event, SessionEvent
from tests.conftest import LOCAL
from tests.fakes.llm_server import (
    BadToolArguments,
    FakeLLMServer,
    InvalidJson,
    Raw,
    Reply,
    Text,
)

PROTOCOLS = {"ollama": "Ollama", "litellm": "OpenAI-compatible"}
HOSTILE: dict[str, tuple[Reply, str]] = {
    "html-page": (Raw(), "an HTML page"),
    "broken-line": (InvalidJson(after_chunks=2, text="Half an answer"), "not JSON"),
    "empty-body": (Raw(b"", content_type="application/json"), ""),
    "json-not-protocol": (Raw('{"status": "ok"}\n', content_type="application/json"), ""),
}


async def run(services: Services, text: str) -> list[Event]:
    return [event async for event in services.engine.run_turn(TurnRequest(text, space_id=LOCAL))]


async def logs(services: Services) -> list[ApiLog]:
    return list(reversed(await services.repos.api_logs.list(ApiLogFilter())))


def short_form(backend: str) -> str:
    return (
        f"The language model server answered with something that is not the "
        f"{PROTOCOLS[backend]} protocol; check LLM_API_BASE."
    )


def assert_no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    assert not [r for r in caplog.records if r.exc_info and r.levelno >= logging.INFO], [
        r.getMessage() for r in caplog.records if r.exc_info
    ]


@pytest.mark.parametrize("kind", sorted(HOSTILE))
async def test_a_reply_that_is_not_the_protocol_is_a_logged_error_naming_the_cause(
    services: Services,
    backend: str,
    llm: FakeLLMServer,
    kind: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    reply, detail = HOSTILE[kind]
    llm.script(reply, reply)
    caplog.set_level(logging.INFO)
    events = await run(services, "hello?")

    error = events[-1]
    assert isinstance(error, ErrorEvent), events
    assert error.message == short_form(backend)
    assert not any(isinstance(e, DoneEvent) for e in events)
    assert len(llm.chat_requests) == 1, "not the protocol is not retried"
    (row,) = await logs(services)
    assert row.error is not None and row.purpose == "chat"
    assert f"answered with something that is not the {PROTOCOLS[backend]} protocol" in row.error
    assert "LLM_API_BASE probably points at the wrong thing" in row.error
    assert detail in row.error
    if kind == "broken-line":
        assert row.response_text == "Half an answer", "what came before the bad line is kept"
    assert_no_traceback(caplog)
    stored = await services.repos.messages.all_for_session(LOCAL, error_session(events))
    # The question is kept, and the failure is recorded as such (so a restart does not take the
    # turn for cut off) — never a fake answer.
    assert [m.role for m in stored] == ["user", FAILED_TURN_ROLE]


def error_session(events: list[Event]) -> str:
    first = events[0]
    assert isinstance(first, SessionEvent)
    return first.session_id


async def test_an_html_page_is_an_error_for_whole_answers_too(
    services: Services, backend: str, llm: FakeLLMServer
) -> None:
    llm.script(Raw(), Raw())
    with pytest.raises(LLMError) as raised:
        await services.gateway.complete([{"role": "user", "content": "summarise"}])
    assert str(raised.value) == short_form(backend)
    cause = raised.value.__cause__
    assert isinstance(cause, BackendError) and cause.kind is ModelErrorKind.PROTOCOL
    (row,) = await logs(services)
    assert row.purpose == "complete" and row.error is not None and "HTML page" in row.error


async def test_ollama_tool_call_arguments_that_are_not_json_are_a_named_error(
    services: Services, backend: str, llm: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    async def web_search(query: str) -> str:
        """Search.

        Args:
            query: What to look for.
        """
        return "nothing"

    services.registry.register(web_search)
    llm.script(BadToolArguments("web_search", "query=kyoto weather"), Text("No search, then."))
    caplog.set_level(logging.INFO)
    events = await run(services, "weather?")
    row = (await logs(services))[0]
    if backend == "litellm":
        # OpenAI-style arguments are a string anyway: the tool answers the model instead.
        assert row.error is None and "query=kyoto weather" in (row.response_text or "")
        assert isinstance(events[-1], DoneEvent) and events[-1].text == "No search, then."
        return
    error = events[-1]
    assert isinstance(error, ErrorEvent)
    assert error.message == (
        "The language model sent a malformed reply "
        "(a tool call whose arguments are not a JSON object)."
    )
    assert row.error is not None
    assert "a tool call whose arguments are not a JSON object" in row.error
    assert "not the Ollama protocol" in row.error
    assert_no_traceback(caplog)


async def test_a_good_reply_after_a_bad_one_works(
    services: Services, backend: str, llm: FakeLLMServer
) -> None:
    llm.script(Raw(), Text("Fine now."))
    assert isinstance((await run(services, "first"))[-1], ErrorEvent)
    events = await run(services, "second")
    assert "".join(e.text for e in events if isinstance(e, ChunkEvent)) == "Fine now."
    rows = await logs(services)
    assert [row.error is None for row in rows] == [False, True], "every call leaves a row"
