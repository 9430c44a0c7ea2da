"""The tool loop keeps seed 000's budget and the model's window at every round (end to end)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.chat.budget.allocation import (
    ANSWER_RESERVE_SHARE,
    MIN_ANSWER_RESERVE,
    PAGE_TOKENS,
    prompt_budget,
)
from bot.chat.budget.tokens import estimate_tokens, message_tokens
from bot.chat.budget.tool_budget import MAX_TOOL_CONTEXT_CHARS
from bot.chat.budget.turn_fit import content_tokens
from bot.chat.engine import TurnRequest
from bot.prompts import prompts_for
from bot.services import ServiceOptions, Services, open_services
from bot.tools.paging import page_footer
from bot.turn.events import ChunkEvent, DoneEvent, Event, SessionEvent, ToolEvent
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text, ToolCalls

PROMPTS = prompts_for("en")
HEAD = PROMPTS.format("tool_result_prefix", name="page") + "\n"


async def run(services: Services, text: str, session_id: str | None = None) -> list[Event]:
    """One turn's events."""
    return [
        event
        async for event in services.engine.run_turn(TurnRequest(text, session_id, space_id=LOCAL))
    ]


def tool_contents(request: RecordedRequest) -> list[str]:
    return [str(m.get("content") or "") for m in request.messages if m["role"] == "tool"]


def page_of(size: int, n: int) -> str:
    """A paged result of exactly `size` characters, its footer included."""
    footer = page_footer(f"next-of-{n}")
    return f"[{n}]" + "p" * (size - len(footer) - len(f"[{n}]")) + footer


@pytest.mark.parametrize(
    ("sizes", "ran", "cut_to"),
    [
        ([5000] * 6, 5, 4000),
        ([5999] * 6, 4, None),  # 4 characters left: too few for any result, nothing more runs
        ([5999, 5000] * 3, 5, MAX_TOOL_CONTEXT_CHARS - 2 * 5999 - 2 * 5000),
    ],
    ids=["5000", "5999", "mixed"],
)
async def test_six_parallel_pages_never_cross_24000_characters(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    sizes: list[int],
    ran: int,
    cut_to: int | None,
) -> None:
    # A window with room for the whole 24,000 characters, so only the cap is at work here.
    settings = make_settings(backend, llm_context_tokens=16384)
    invoked: list[int] = []
    async with open_services(settings, service_options) as services:

        async def page(n: int, continue_from: str | None = None) -> str:
            """Read one page.

            Args:
                n: Which page.
                continue_from: The next_token of the previous page.
            """
            invoked.append(n)
            return page_of(sizes[n], n)

        services.registry.register(page, paged=True)
        calls = [("page", {"n": n, "continue_from": f"start-of-{n}"}) for n in range(6)]
        llm.script(ToolCalls(calls), Text("Here is what I read."))
        events = await run(services, "read all six pages")

    assert invoked == list(range(ran)), "the calls after the cap do not run"
    assert isinstance(events[-1], DoneEvent)
    second = llm.chat_requests[1]
    contents = tool_contents(second)
    assert len(contents) == 6, "every tool call id keeps its tool message"
    results = [content.removeprefix(HEAD) for content in contents if content.startswith(HEAD)]
    assert len(results) == ran
    assert sum(len(result) for result in results) <= MAX_TOOL_CONTEXT_CHARS
    not_run = PROMPTS.format("tool_not_run", limit=MAX_TOOL_CONTEXT_CHARS)
    assert contents[ran:] == [not_run] * (6 - ran)
    whole = [page_of(size, n) for n, size in enumerate(sizes)]
    if cut_to is None:
        assert results == whole[:ran]
    else:
        assert results[: ran - 1] == whole[: ran - 1]
        cut = results[-1]
        assert len(cut) <= cut_to, "cut to at most what remained of the 24,000"
        assert cut.startswith(whole[ran - 1][:100])
        # No tool can run in the next call: the marker says what is left out, names no call,
        # and the kept footer resumes where the cut page began (in a later turn).
        closed = PROMPTS.format("tool_result_cut_closed", limit=MAX_TOOL_CONTEXT_CHARS)
        assert cut.endswith(f"\n{closed}" + page_footer(f"start-of-{ran - 1}"))
        assert "call page" not in cut
        assert f"next-of-{ran - 1}" not in cut
    assert second.tool_names == [], "the next call offers no tools"
    notice = PROMPTS.format("tool_budget_exhausted", limit=MAX_TOOL_CONTEXT_CHARS)
    assert [m["content"] for m in second.messages if m["role"] == "system"][-1] == notice
    statuses = [(e.name, e.status) for e in events if isinstance(e, ToolEvent)]
    assert statuses == [("page", "running"), ("page", "done")] * ran


async def test_a_cut_first_page_names_no_call_when_no_tool_can_run(
    services: Services, llm: FakeLLMServer
) -> None:
    async def page(n: int, continue_from: str | None = None) -> str:
        """Read one page.

        Args:
            n: Which page.
            continue_from: The next_token of the previous page.
        """
        return page_of(5000, n)

    services.registry.register(page, paged=True)
    llm.script(ToolCalls([("page", {"n": n}) for n in range(5)]), Text("ok"))
    await run(services, "read")
    second = llm.chat_requests[1]
    assert second.tool_names == []
    cut = tool_contents(second)[4].removeprefix(HEAD)
    assert len(cut) <= 4000
    assert "---page-info---" not in cut, "no token resumes at a first page's start"
    closed = PROMPTS.format("tool_result_cut_closed", limit=MAX_TOOL_CONTEXT_CHARS)
    assert cut.endswith(f"\n{closed}")
    assert "call page" not in cut, "no call is suggested in a request that offers no tools"


def request_tokens(request: RecordedRequest) -> int:
    """The request as the project's estimator counts it: messages and tool schemas."""
    messages = sum(message_tokens(_openai_shape(message)) for message in request.messages)
    tools = estimate_tokens(json.dumps(request.tools, ensure_ascii=False)) if request.tools else 0
    return messages + tools


def _openai_shape(message: dict[str, Any]) -> dict[str, Any]:
    """Ollama sends tool-call arguments as objects; count them as the JSON text they are."""
    calls = []
    for call in message.get("tool_calls") or ():
        function = dict(call.get("function") or {})
        if not isinstance(function.get("arguments"), str):
            function["arguments"] = json.dumps(function.get("arguments"), ensure_ascii=False)
        calls.append({**call, "function": function})
    return {**message, "tool_calls": calls}


async def test_four_rounds_of_a_japanese_page_stay_inside_an_8192_window(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    window = 8192
    settings = make_settings(backend, llm_context_tokens=window, language="ja")
    page_text = ("京都の紅葉は十一月に見頃を迎えます。" * 200)[:3000]
    question = "京都のノートを読んで"
    async with open_services(settings, service_options) as services:
        await services.notes.create(LOCAL, "京都", page_text)
        llm.script(
            *[ToolCalls([("read_note", {"title": "京都"})]) for _ in range(4)],
            Text("紅葉は十一月です。"),
        )
        events = await run(services, question)
    assert isinstance(events[-1], DoneEvent)
    requests = llm.chat_requests
    assert len(requests) == 5
    reserve = max(MIN_ANSWER_RESERVE, int(window * ANSWER_RESERVE_SHARE))
    system = prompts_for("ja")["system"]
    for index, request in enumerate(requests):
        assert request_tokens(request) + reserve <= window, f"request {index + 1} overflows"
        messages = request.messages
        assert messages[0]["role"] == "system" and messages[0]["content"].startswith(system)
        assert [m["content"] for m in messages if m["role"] == "user"] == [question]
        contents = tool_contents(request)
        assert len(contents) == index
        if contents:
            assert page_text in contents[-1], "the newest page arrives whole"
    marker = "コンテキストウィンドウに収めるため"
    shortened = [content for content in tool_contents(requests[-1]) if marker in content]
    assert shortened, "earlier pages were shortened, not the window overrun"
    assert all(content.count("京都の紅葉") >= 1 for content in shortened), "each keeps its start"
    unfitted = sum(message_tokens({"content": page_text}) for _ in range(4))
    assert unfitted + reserve > window, "the pages alone would not have fitted"


async def test_a_window_without_room_for_a_page_offers_no_tools_and_says_so_once(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    window = 2048
    settings = make_settings(backend, llm_context_tokens=window)
    async with open_services(settings, service_options) as services:
        llm.script(Text("Answered without tools."))
        events = await run(services, "ping a lot")
    assert "".join(e.text for e in events if isinstance(e, ChunkEvent)) == "Answered without tools."
    (only,) = llm.chat_requests
    assert only.tool_names == [], "no room for a page: no tools offered"
    contents = [m["content"] for m in only.messages]
    assert contents.count(PROMPTS["tool_window_exhausted"]) == 1, "told once"
    reserve = max(MIN_ANSWER_RESERVE, int(window * ANSWER_RESERVE_SHARE))
    assert request_tokens(only) + reserve <= window


async def test_parallel_calls_run_only_while_a_page_of_result_still_fits(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    window = 4096
    settings = make_settings(backend, llm_context_tokens=window)
    async with open_services(settings, service_options) as services:
        runs = 0

        async def ping(n: int) -> str:
            """Ping.

            Args:
                n: Which ping.
            """
            nonlocal runs
            runs += 1
            return f"pong {n}"

        services.registry.register(ping)
        llm.script(ToolCalls([("ping", {"n": n}) for n in range(60)]), Text("Enough pings."))
        events = await run(services, "ping a lot")
        budget = prompt_budget(window, request_tokens_of_tools(services))
    assert "".join(e.text for e in events if isinstance(e, ChunkEvent)) == "Enough pings."
    first, last = llm.chat_requests
    assert "ping" in first.tool_names
    assert 0 < runs < 60, "the calls run while a page still fits, not after"
    contents = tool_contents(last)
    assert len(contents) == 60, "every tool call id keeps its tool message"
    not_run = PROMPTS["tool_not_run_window"]
    assert contents[runs:] == [not_run] * (60 - runs)
    assert all(content.startswith(HEAD.replace("page", "ping")) for content in contents[:runs])
    # Each call ran only with a page of room left after the results before it (the notice
    # that ends the tools came after the round).
    told = PROMPTS["tool_window_exhausted"]
    spent = sum(
        message_tokens(_openai_shape(m))
        for m in last.messages
        if m["role"] != "tool" and m.get("content") != told
    )
    room_before = budget - spent - sum(content_tokens(c) for c in contents[: runs - 1])
    room_after = room_before - content_tokens(contents[runs - 1])
    assert room_before >= PAGE_TOKENS > room_after, "the last call ran with a page of room"
    assert last.tool_names == [], "the next call offers no tools"
    assert [m.get("content") for m in last.messages].count(told) == 1, "told once"
    assert request_tokens(last) <= budget


def request_tokens_of_tools(services: Services) -> int:
    """Estimated tokens of every registered tool schema."""
    return estimate_tokens(json.dumps(services.registry.schemas(), ensure_ascii=False))


async def test_max_tool_result_chars_is_a_setting(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings(max_tool_result_chars=2000)
    async with open_services(settings, service_options) as services:

        async def blob() -> str:
            """A long unpaged text."""
            return "para one.\n\n" + "y" * 5000

        services.registry.register(blob)
        llm.script(ToolCalls([("blob", {})]), Text("ok"))
        await run(services, "read")
    (content,) = tool_contents(llm.chat_requests[1])
    result = content.removeprefix(PROMPTS.format("tool_result_prefix", name="blob") + "\n")
    assert len(result) <= 2000 and result.endswith("[truncated]")


async def test_the_session_event_comes_only_when_a_session_is_created(
    services: Services, llm: FakeLLMServer
) -> None:
    llm.script(Text("one"), Text("two"))
    first = await run(services, "hello")
    assert isinstance(first[0], SessionEvent) and first[0].created
    second = await run(services, "again", first[0].session_id)
    assert not any(isinstance(event, SessionEvent) for event in second)
    assert "".join(e.text for e in second if isinstance(e, ChunkEvent)) == "two"
    stored = await services.repos.messages.all_for_session(LOCAL, first[0].session_id)
    assert [m.content for m in stored] == ["hello", "one", "again", "two"]
