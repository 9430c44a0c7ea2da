"""The conversation engine end to end: real clients (ollama, LiteLLM) against the loopback LLM."""

from __future__ import annotations

import asyncio
import json
import logging
import socket

import pytest

from bot.chat.budget.tool_budget import MAX_TOOL_CONTEXT_CHARS, PAGE_INFO_MARKER
from bot.chat.engine import TurnRequest
from bot.errors import ToolError
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.messages import FAILED_TURN_ROLE
from bot.store.repos.sessions import Session
from bot.tools.registry import Source, ToolDisplay, ToolResult
from bot.tools.web_search import web_search_sources
from bot.turn.events import (
    ChunkEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    SessionEvent,
    SourcesEvent,
    ToolEvent,
)
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import Drop, FakeLLMServer, Hang, HttpError, Text, ToolCalls


async def run(services: Services, text: str, session_id: str | None = None) -> list[Event]:
    """One turn's events."""
    request = TurnRequest(text, session_id, space_id=LOCAL)
    return [event async for event in services.engine.run_turn(request)]


def session_of(events: list[Event]) -> str:
    first = events[0]
    assert isinstance(first, SessionEvent)
    return first.session_id


def answer(events: list[Event]) -> str:
    return "".join(event.text for event in events if isinstance(event, ChunkEvent))


async def test_turn_without_tools_costs_one_llm_request(
    services: Services, llm: FakeLLMServer
) -> None:
    # Pieces apart in time, as a model streams them.
    llm.script(Text("Hello there, friend.", chunks=4, delay=0.1))
    events = await run(services, "hi")
    assert answer(events) == "Hello there, friend."
    assert isinstance(events[-1], DoneEvent)
    assert len(llm.chat_requests) == 1
    assert len([e for e in events if isinstance(e, ChunkEvent)]) >= 2, "streamed, not one blob"
    stored = await services.repos.messages.all_for_session(LOCAL, session_of(events))
    assert [(m.role, m.content) for m in stored] == [
        ("user", "hi"),
        ("assistant", "Hello there, friend."),
    ]


async def test_tool_round_trip(services: Services, llm: FakeLLMServer) -> None:
    seen: list[str] = []

    async def lookup(city: str) -> str:
        """Look up the weather.

        Args:
            city: City name.
        """
        seen.append(city)
        return f"Sunny in {city}"

    services.registry.register(lookup)
    llm.script(ToolCalls([("lookup", {"city": "Kyoto"})]), Text("It is sunny in Kyoto."))
    events = await run(services, "weather in Kyoto?")

    assert seen == ["Kyoto"]
    tool_events = [e for e in events if isinstance(e, ToolEvent)]
    assert [(e.name, e.status) for e in tool_events] == [("lookup", "running"), ("lookup", "done")]
    assert tool_events[0].id == tool_events[1].id
    assert answer(events) == "It is sunny in Kyoto."
    first, second = llm.chat_requests
    assert "lookup" in first.tool_names
    tool_messages = [m for m in second.messages if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "Sunny in Kyoto" in tool_messages[0]["content"]
    assert "Untrusted tool output" in tool_messages[0]["content"]
    order = [type(e).__name__ for e in events]
    assert order[0] == "SessionEvent" and order[-1] == "DoneEvent"
    assert order.index("ToolEvent") < order.index("ChunkEvent")


async def test_failing_tool_returns_error_to_model(services: Services, llm: FakeLLMServer) -> None:
    async def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    services.registry.register(broken)
    llm.script(ToolCalls([("broken", {}), ("missing_tool", {})]), Text("Sorry."))
    events = await run(services, "try it")
    statuses = [(e.name, e.status) for e in events if isinstance(e, ToolEvent)]
    assert ("broken", "error") in statuses and ("missing_tool", "error") in statuses
    contents = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert "disk on fire" in contents[0]
    assert "Unknown tool" in contents[1]
    assert answer(events) == "Sorry."


async def test_tool_rounds_are_capped_at_five(services: Services, llm: FakeLLMServer) -> None:
    calls = 0

    async def ping() -> str:
        """Ping."""
        nonlocal calls
        calls += 1
        return "pong"

    services.registry.register(ping)
    llm.script(*[ToolCalls([("ping", {})]) for _ in range(6)], Text("done"))
    events = await run(services, "ping forever")
    assert calls == 5
    assert len(llm.chat_requests) == 6
    assert llm.chat_requests[5].tool_names == [], "the last call offers no tools"
    assert isinstance(events[-1], DoneEvent)


async def test_tool_results_stop_at_24000_chars(services: Services, llm: FakeLLMServer) -> None:
    runs = 0

    async def page(n: int) -> str:
        """A big result.

        Args:
            n: Which page.
        """
        nonlocal runs
        runs += 1
        return "x" * 6000

    services.registry.register(page)
    llm.script(ToolCalls([("page", {"n": i}) for i in range(6)]), Text("enough"))
    events = await run(services, "read all")
    assert runs == MAX_TOOL_CONTEXT_CHARS // 6000
    second = llm.chat_requests[1]
    assert second.tool_names == [], "no tools once the budget is spent"
    refused = [m for m in second.messages if m["role"] == "tool"][4:]
    assert refused and all("budget" in m["content"] for m in refused)
    assert answer(events) == "enough"


async def test_paged_result_passes_uncut(services: Services, llm: FakeLLMServer) -> None:
    body = "word " * 1150
    paged = f"{body}{PAGE_INFO_MARKER}has_more: true\nnext_token: abc"
    assert 5000 < len(paged) <= 6000

    async def reader() -> str:
        """Paged reader."""
        return paged

    async def blob() -> str:
        """Unpaged big text."""
        return "para one.\n\n" + "y" * 7000

    services.registry.register(reader, paged=True)
    services.registry.register(blob)
    llm.script(ToolCalls([("reader", {}), ("blob", {})]), Text("ok"))
    await run(services, "read")
    tool_messages = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert tool_messages[0].endswith(paged)
    assert "truncated" in tool_messages[1] and len(tool_messages[1]) < 6200


@pytest.mark.parametrize("failure", ["500", "drop", "timeout"])
async def test_llm_failure_gives_error_event_and_keeps_message(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    failure: str,
) -> None:
    settings = make_settings(backend, llm_timeout=1.0)
    replies = {
        "500": [HttpError(500, "boom"), HttpError(500, "boom")],
        "drop": [Drop(after_chunks=2, text="partial answer here")],
        "timeout": [Hang()],
    }[failure]
    async with open_services(settings, service_options) as services:
        llm.script(*replies)
        events = await run(services, "first question")
        error = events[-1]
        assert isinstance(error, ErrorEvent), events
        assert error.message and "Traceback" not in error.message
        session_id = session_of(events)
        stored = await services.repos.messages.all_for_session(LOCAL, session_id)
        # The failure is recorded as the question's answer, never shown to the model.
        assert [(m.role, m.content) for m in stored] == [
            ("user", "first question"),
            (FAILED_TURN_ROLE, error.message),
        ]

        llm.script(Text("second answer"))
        events = await run(services, "second question", session_id)
        assert answer(events) == "second answer"
        last = llm.chat_requests[-1].messages
        assert [m["content"] for m in last if m["role"] == "user"] == [
            "first question",
            "second question",
        ]
        logs = await services.repos.api_logs.list(_errors_only())
        assert logs and all(log.error for log in logs)


def _errors_only():  # type: ignore[no-untyped-def]
    from bot.store.repos.api_logs import ApiLogFilter

    return ApiLogFilter(errors_only=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_unreachable_ollama_is_short_in_the_chat_and_named_in_the_log(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    base = f"http://127.0.0.1:{_free_port()}"
    async with open_services(make_settings("ollama", llm_api_base=base), service_options) as svc:
        events = await run(svc, "hello?")
        rows = await svc.repos.api_logs.list(_errors_only())
    error = events[-1]
    assert isinstance(error, ErrorEvent)
    assert error.message == "The language model is not reachable right now.", "no address"
    (row,) = rows
    assert row.error is not None
    assert row.error == (
        f"The model server at {base} is not reachable (connection refused); start Ollama or set "
        "LLM_API_BASE."
    )


async def test_unreachable_litellm_provider_is_one_clear_sentence(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    base = f"http://127.0.0.1:{_free_port()}/v1"
    settings = make_settings("litellm", llm_api_base=base)
    async with open_services(settings, service_options) as svc:
        events = await run(svc, "hello?")
        rows = await svc.repos.api_logs.list(_errors_only())
    error = events[-1]
    assert isinstance(error, ErrorEvent)
    assert error.message == "The language model is not reachable right now."
    (row,) = rows
    assert row.error == (
        f"The model server at {base} is not reachable (connection refused); start it or set "
        "LLM_API_BASE."
    )


async def test_concurrent_messages_in_one_session_are_answered_in_order(
    services: Services, llm: FakeLLMServer
) -> None:
    llm.script(Text("setup"))
    session_id = session_of(await run(services, "start"))
    llm.script(Text("answer one", chunks=3, delay=0.05), Text("answer two"))
    first = asyncio.create_task(run(services, "question one", session_id))
    await llm.wait_for_requests(2)
    second = asyncio.create_task(run(services, "question two", session_id))
    events_one, events_two = await asyncio.gather(first, second)
    assert answer(events_one) == "answer one"
    assert answer(events_two) == "answer two"
    stored = await services.repos.messages.all_for_session(LOCAL, session_id)
    assert [m.content for m in stored] == [
        "start",
        "setup",
        "question one",
        "answer one",
        "question two",
        "answer two",
    ]
    convo = [m["content"] for m in llm.chat_requests[-1].messages if m["role"] != "system"]
    assert convo == ["start", "setup", "question one", "answer one", "question two"]


async def test_summarisation_archives_and_loses_nothing(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    settings = make_settings(backend, memory_summarize_threshold=6)
    async with open_services(settings, service_options) as services:
        session_id: str | None = None
        for index in range(3):
            llm.script(Text(f"answer {index}"))
            if index == 2:
                llm.script(Text("SUMMARY: the user asked three questions."))
            events = await run(services, f"question {index}", session_id)
            session_id = session_id or session_of(events)
        await services.tasks.drain()
        assert session_id is not None
        memories = await services.repos.memories.live(LOCAL, session_id)
        assert [m.summary for m in memories] == ["SUMMARY: the user asked three questions."]
        every = await services.repos.messages.all_for_session(LOCAL, session_id)
        assert len(every) == 6, "nothing deleted"
        archived = [m for m in every if m.archived_at is not None]
        assert [m.content for m in archived] == ["question 0", "answer 0", "question 1"]
        assert {m.memory_id for m in archived} == {memories[0].id}
        summary_request = llm.chat_requests[-1]
        assert "question 0" in json.dumps(summary_request.json, ensure_ascii=False)

        await services.summarizer.maybe_summarize(LOCAL, session_id)
        assert len(await services.repos.memories.live(LOCAL, session_id)) == 1, "never twice"

        llm.script(Text("final"))
        await run(services, "question 3", session_id)
        context = llm.chat_requests[-1].messages
        text = json.dumps(context, ensure_ascii=False)
        assert "SUMMARY: the user asked three questions." in text
        assert "question 0" not in text and "question 2" in text


async def test_a_failed_background_summary_logs_one_warning(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = make_settings(backend, memory_summarize_threshold=4)
    async with open_services(settings, service_options) as services:
        session_id: str | None = None
        for index in range(2):
            llm.script(Text(f"answer {index}"))
            if index == 1:
                llm.script(HttpError(400, "bad request"))
            events = await run(services, f"question {index}", session_id)
            session_id = session_id or session_of(events)
        with caplog.at_level(logging.INFO):
            await services.tasks.drain()
        assert session_id is not None
        assert await services.repos.memories.live(LOCAL, session_id) == []
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert warnings[0].name == "bot.llm.gateway"
        infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
        assert any("postponed" in message for message in infos)


async def test_settings_override_reaches_next_turn(services: Services, llm: FakeLLMServer) -> None:
    llm.script(Text("one"), Text("two"))
    await run(services, "hi")
    prefix = "ollama/" if services.settings().uses_ollama else "openai/"
    await services.settings.update({"llm_model": f"{prefix}other-model"})
    await run(services, "again")
    assert [r.model for r in llm.chat_requests] == ["test-model", "other-model"]


async def test_secrets_never_reach_api_logs(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    secret = "sk-live-0123456789abcdefSECRET"
    settings = make_settings(backend, llm_api_key=secret, discord_token="MTIzNDU2Nzg5.secret.tok")
    async with open_services(settings, service_options) as services:
        llm.script(Text(f"the key is {secret}"), HttpError(401, f"bad key {secret}"))
        await run(services, f"remember {secret} and MTIzNDU2Nzg5.secret.tok")
        await run(services, "again")
        rows = await services.db.fetchall("SELECT * FROM api_logs")
    assert len(rows) >= 2
    dump = json.dumps([dict(row) for row in rows], ensure_ascii=False)
    assert secret not in dump and "MTIzNDU2Nzg5.secret.tok" not in dump
    assert "[REDACTED]" in dump
    if backend == "litellm":
        sent = llm.chat_requests[0].headers.get("Authorization", "")
        assert secret in sent, "the key is used, only never logged"


async def test_sources_event_lists_search_hits(services: Services, llm: FakeLLMServer) -> None:
    async def web_search(query: str) -> list[dict[str, str]]:
        """Search.

        Args:
            query: Query.
        """
        return [{"title": "Example", "href": "https://example.com/a", "body": "snippet"}]

    services.registry.register(web_search, sources=web_search_sources)
    llm.script(ToolCalls([("web_search", {"query": "q"})]), Text("Found it."))
    events = await run(services, "search q")
    sources = [e for e in events if isinstance(e, SourcesEvent)]
    assert sources and sources[-1].sources == [{"title": "Example", "url": "https://example.com/a"}]


async def test_tool_events_carry_the_tools_icon_and_failure_and_sources_accumulate(
    services: Services, llm: FakeLLMServer
) -> None:
    async def fetch_page(url: str) -> str:
        """Fetch a page.

        Args:
            url: Address.
        """
        if "down" in url:
            raise ToolError(f"Failed to fetch {url}: HTTP 503")
        return f"text of {url}"

    def page_sources(args: dict[str, object], result: ToolResult) -> list[Source]:
        return [Source(f"Page {args['url']}", str(args["url"]))]

    services.registry.register(
        fetch_page,
        display=ToolDisplay("🛰️", lambda args: f"fetching {args['url']}"),
        sources=page_sources,
    )
    a, b = "https://a.example/", "https://b.example/"
    llm.script(
        ToolCalls([("fetch_page", {"url": a}), ("fetch_page", {"url": "https://down.example/"})]),
        ToolCalls([("fetch_page", {"url": a}), ("fetch_page", {"url": b}), ("nope", {})]),
        Text("Done."),
    )
    events = await run(services, "read them")
    tools = [e for e in events if isinstance(e, ToolEvent)]
    assert [(e.icon, e.label, e.status) for e in tools] == [
        ("🛰️", f"fetching {a}", "running"),
        ("🛰️", f"fetching {a}", "done"),
        ("🛰️", "fetching https://down.example/", "running"),
        ("🛰️", "fetching https://down.example/", "error"),
        ("🛰️", f"fetching {a}", "running"),
        ("🛰️", f"fetching {a}", "done"),
        ("🛰️", f"fetching {b}", "running"),
        ("🛰️", f"fetching {b}", "done"),
        ("🔧", "nope", "running"),
        ("🔧", "nope", "error"),
    ]
    assert tools[3].result == "Failed to fetch https://down.example/: HTTP 503"
    lists = [e.sources for e in events if isinstance(e, SourcesEvent)]
    assert lists == [
        [{"title": f"Page {a}", "url": a}],
        [{"title": f"Page {a}", "url": a}, {"title": f"Page {b}", "url": b}],
    ], "a failed call adds none, a repeated source is listed once"
    contents = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert contents[1].endswith("\nFailed to fetch https://down.example/: HTTP 503"), "verbatim"


async def test_three_queued_messages_in_one_session_never_overlap(
    services: Services, llm: FakeLLMServer
) -> None:
    llm.script(Text("setup"))
    session_id = session_of(await run(services, "start"))
    llm.script(
        Text("answer one", chunks=3, delay=0.05),
        Text("answer two", chunks=3, delay=0.05),
        Text("answer three"),
    )
    first = asyncio.create_task(run(services, "question one", session_id))
    await llm.wait_for_requests(2)
    second = asyncio.create_task(run(services, "question two", session_id))
    third = asyncio.create_task(run(services, "question three", session_id))
    await asyncio.gather(first, second, third)
    stored = await services.repos.messages.all_for_session(LOCAL, session_id)
    assert [m.content for m in stored][2:] == [
        "question one",
        "answer one",
        "question two",
        "answer two",
        "question three",
        "answer three",
    ]
    convo = [m["content"] for m in llm.chat_requests[-1].messages if m["role"] != "system"]
    assert convo[-3:] == ["question two", "answer two", "question three"]


async def test_two_turns_at_once_for_a_new_named_session_are_both_answered(
    services: Services, llm: FakeLLMServer
) -> None:
    llm.script(Text("answer A"), Text("answer B"))
    results = await asyncio.gather(
        run(services, "one", "named-session"), run(services, "two", "named-session")
    )
    assert not [e for events in results for e in events if isinstance(e, ErrorEvent)]
    assert sorted(answer(events) for events in results) == ["answer A", "answer B"]
    created = [e for events in results for e in events if isinstance(e, SessionEvent)]
    assert [(e.session_id, e.created) for e in created] == [("named-session", True)]
    stored = await services.repos.messages.all_for_session(LOCAL, "named-session")
    assert sorted(m.content for m in stored) == ["answer A", "answer B", "one", "two"]


async def test_a_named_session_of_another_space_is_still_refused(
    services: Services, llm: FakeLLMServer
) -> None:
    await services.repos.sessions.create("guild:1", session_id="theirs")
    events = await run(services, "hello", "theirs")
    assert isinstance(events[-1], ErrorEvent)
    assert not llm.chat_requests
    assert await services.repos.messages.all_for_session("guild:1", "theirs") == []


async def test_a_session_handed_over_is_not_read_again_and_one_of_another_space_is_ignored(
    services: Services, llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = await services.repos.sessions.create(LOCAL, session_id="mine")
    theirs = await services.repos.sessions.create("guild:1", session_id="theirs")
    reads: list[str] = []
    read = services.repos.sessions.get

    async def counted(scope: str, session_id: str) -> Session | None:
        reads.append(session_id)
        return await read(scope, session_id)

    monkeypatch.setattr(services.repos.sessions, "get", counted)
    llm.script(Text("Hi."))
    request = TurnRequest("hello", "mine", space_id=LOCAL, session=mine)
    events = [event async for event in services.engine.run_turn(request)]
    assert answer(events) == "Hi." and reads == []
    assert not [e for e in events if isinstance(e, SessionEvent)], "not announced as new"
    stored = await services.repos.messages.all_for_session(LOCAL, "mine")
    assert [(m.role, m.content) for m in stored] == [("user", "hello"), ("assistant", "Hi.")]
    # A session that is not the request's (another space here) is looked up as without one.
    request = TurnRequest("hello", "theirs", space_id=LOCAL, session=theirs)
    events = [event async for event in services.engine.run_turn(request)]
    assert isinstance(events[-1], ErrorEvent)
    assert reads == ["theirs", "theirs"]  # before and after the refused create, as before
    assert len(llm.chat_requests) == 1
    assert await services.repos.messages.all_for_session("guild:1", "theirs") == []
