"""search_and_fetch as the model sees it: one turn through the engine and the loopback LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, open_services
from bot.tools.paging import MAX_TOOL_RESULT_CHARS, parse_paged_result
from bot.tools.safe_http import FetchPolicy
from tests.conftest import FAST_RETRY, LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text, ToolCalls
from tests.fakes.web_server import FakeWebServer


@pytest.fixture
async def web() -> AsyncIterator[FakeWebServer]:
    async with FakeWebServer() as server:
        yield server


async def test_the_model_gets_a_full_page_labelled_in_its_language(
    make_settings: SettingsFactory, llm: FakeLLMServer, web: FakeWebServer
) -> None:
    short = "短い説明。" * 100
    long = "".join(f"行 {i:04d}: 長い資料の本文です。\n" for i in range(600))
    web.add_page("/short.txt", short, content_type="text/plain; charset=utf-8")
    web.add_page("/long.txt", long, content_type="text/plain; charset=utf-8")
    hits = [
        {"title": "Short", "href": web.url_for("/short.txt"), "body": ""},
        {"title": "Long", "href": web.url_for("/long.txt"), "body": ""},
    ]
    options = ServiceOptions(
        retry=FAST_RETRY,
        fetch_policy=FetchPolicy.allowing("127.0.0.1/32"),
        search_fn=lambda query, n: hits,
    )
    async with open_services(make_settings(language="ja"), options) as services:
        llm.script(
            ToolCalls([("search_and_fetch", {"query": "資料", "file_type": "txt"})]),
            Text("読みました。"),
        )
        [
            event
            async for event in services.engine.run_turn(TurnRequest("資料を探して", space_id=LOCAL))
        ]
    (result,) = [m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    page = result[result.index("=== 候補 1 ===") :]
    assert len(page) == MAX_TOOL_RESULT_CHARS
    body, meta = parse_paged_result(page)
    assert meta["has_more"] is True
    assert "タイトル: Short" in body and "文字数: 500" in body
    assert short in body, "the short file whole"
    second = body.split("\n\n=== 候補 2 ===\n")[1]
    head, text = second.split("\n---\n", 1)
    assert "タイトル: Long" in head
    assert text and long.startswith(text), "the long file fills the rest of the page"
