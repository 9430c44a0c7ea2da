"""The built-in tools as the model sees them: offered, paged through the engine, SSRF-safe."""

from __future__ import annotations

import asyncio
import time

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from bot.tools.safe_http import FetchPolicy
from bot.turn.events import ChunkEvent, DoneEvent, Event, ToolEvent
from tests.conftest import FAST_RETRY, LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text, ToolCalls
from tests.fakes.web_server import FakeWebServer

BUILTINS = {"web_search", "scrape_url", "pdf_to_text", "search_and_fetch"}


async def turn(services: Services, text: str, session_id: str | None = None) -> list[Event]:
    return [
        e async for e in services.engine.run_turn(TurnRequest(text, session_id, space_id=LOCAL))
    ]


def _article(paragraphs: int) -> str:
    body = "".join(
        f"<p>Paragraph {i}: the quick brown fox jumps over the lazy dog again and again, "
        f"keeping notes about chapter {i} of the long story.</p>"
        for i in range(paragraphs)
    )
    return f"<html><head><title>Story</title></head><body><article>{body}</article></body></html>"


async def test_builtins_are_offered_and_a_long_page_is_read_by_token(
    make_settings: SettingsFactory, llm: FakeLLMServer, web: FakeWebServer
) -> None:
    web.add_page("/story", _article(120))
    options = ServiceOptions(
        retry=FAST_RETRY,
        fetch_policy=FetchPolicy.allowing("127.0.0.1/32"),
        search_fn=lambda query, n: [],
    )
    url = web.url_for("/story")
    async with open_services(make_settings(scrape_max_chars=3000), options) as services:

        def next_page(request: object) -> ToolCalls:
            last = request.messages[-1]["content"]  # type: ignore[attr-defined]
            token = last.split("next_token: ")[1].split()[0]
            return ToolCalls([("scrape_url", {"url": url, "continue_from": token})])

        llm.script(ToolCalls([("scrape_url", {"url": url})]), next_page, Text("Read it."))
        events = await turn(services, "read the story")
        assert isinstance(events[-1], DoneEvent)
        assert set(llm.chat_requests[0].tool_names) >= BUILTINS
        pages = [
            m["content"]
            for r in llm.chat_requests[1:]
            for m in r.messages[-1:]
            if m["role"] == "tool"
        ]
        assert len(pages) == 2 and "Paragraph 0:" in pages[0]
        assert "has_more: true" in pages[0] and all(len(p) <= 6200 for p in pages)
        assert "Paragraph 0:" not in pages[1], "the second call continues, it does not restart"
        assert len(web.requests) == 1, "paging reuses the parsed document"
        done = [e for e in events if isinstance(e, ToolEvent) and e.status == "done"]
        assert len(done) == 2


async def test_strict_policy_keeps_the_model_away_from_loopback(
    make_settings: SettingsFactory, llm: FakeLLMServer, web: FakeWebServer
) -> None:
    web.add_page("/admin", "<p>internal</p>")
    options = ServiceOptions(retry=FAST_RETRY, search_fn=lambda query, n: [])
    async with open_services(make_settings(), options) as services:
        llm.script(
            ToolCalls(
                [
                    ("scrape_url", {"url": web.url_for("/admin")}),
                    ("pdf_to_text", {"url_or_path": f"http://2130706433:{web.port}/admin"}),
                    ("pdf_to_text", {"url_or_path": "/etc/passwd"}),
                ]
            ),
            Text("Could not read it."),
        )
        await turn(services, "read the admin page")
        results = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
        assert "Blocked URL" in results[0] and "Blocked URL" in results[1]
        assert "internal" not in " ".join(results)
        assert "Local files cannot be read" in results[2] and "root:" not in results[2]
    assert web.requests == []


async def test_hostile_html_costs_a_bounded_error_while_another_turn_completes(
    make_settings: SettingsFactory, llm: FakeLLMServer, web: FakeWebServer
) -> None:
    web.add_page("/deep", "<html><body>" + "<div>" * 60_000 + "x" + "</div>" * 60_000)
    options = ServiceOptions(
        retry=FAST_RETRY,
        fetch_policy=FetchPolicy.allowing("127.0.0.1/32"),
        search_fn=lambda query, n: [],
        parse_timeout=1.0,
    )
    async with open_services(make_settings(), options) as services:
        await services.tool_deps.runner.run(len, "warm")  # type: ignore[union-attr]

        def answer(request: object) -> Text | ToolCalls:
            messages = request.messages  # type: ignore[attr-defined]
            if messages[-1]["role"] == "tool":
                return Text("That page could not be parsed.")
            if "hostile" in messages[-1]["content"]:
                return ToolCalls([("scrape_url", {"url": web.url_for("/deep")})])
            return Text("Hello from the other session.")

        llm.default_reply = answer  # type: ignore[assignment]
        started = time.perf_counter()
        hostile = asyncio.create_task(turn(services, "open the hostile page"))
        await llm.wait_for_requests(1)
        calm = await turn(services, "just say hello")
        calm_done = time.perf_counter() - started
        hostile_events = await hostile
        elapsed = time.perf_counter() - started
    assert (
        "".join(e.text for e in calm if isinstance(e, ChunkEvent))
        == "Hello from the other session."
    )
    tool_done = [e for e in hostile_events if isinstance(e, ToolEvent) and e.status != "running"]
    assert tool_done and tool_done[0].status == "error"
    assert isinstance(hostile_events[-1], DoneEvent)
    assert elapsed < 15, "bounded by the parse deadline, not by the page"
    assert calm_done < elapsed, "the other turn did not wait for the hostile one"
