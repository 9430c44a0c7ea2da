"""web_search: result shape, defaults, cache, rate-limit backoff, deadline; ddgs kept offline."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

import pytest
from ddgs.exceptions import DDGSException, RatelimitException

from bot.config import Settings
from bot.tools.builtin import ToolDeps, register_builtin_tools
from bot.tools.doc_cache import DocumentCache
from bot.tools.isolate import IsolatedRunner
from bot.tools.registry import Source, ToolRegistry, default_registry
from bot.tools.safe_http import FetchPolicy, SafeFetcher
from bot.tools.web_search import (
    DISPLAY,
    SearchUnavailable,
    WebSearch,
    WebSearchTool,
    is_rate_limit,
    normalize_results,
    web_search_sources,
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Scripted:
    """A search function that answers from a script of results or exceptions."""

    def __init__(self, *outcomes: Any) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, int]] = []

    def __call__(self, query: str, max_results: int) -> list[dict[str, Any]]:
        self.calls.append((query, max_results))
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return list(outcome)


RESULTS = [
    {"title": "One", "href": "https://one.example/", "body": "first"},
    {"title": "Two", "url": "https://two.example/", "snippet": "second"},
    "not a dict",
    {"title": None, "href": None, "body": None},
    {"title": "Four", "href": "https://four.example/", "body": "fourth"},
]


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make(search_fn: Scripted, clock: Clock, **kwargs: Any) -> WebSearch:
    return WebSearch(search_fn=search_fn, clock=clock, **kwargs)


def test_normalize_results_uses_the_seeds_fallbacks() -> None:
    assert normalize_results(RESULTS, 10) == [
        {"title": "One", "href": "https://one.example/", "body": "first"},
        {"title": "Two", "href": "https://two.example/", "body": "second"},
        {"title": "", "href": "", "body": ""},
        {"title": "Four", "href": "https://four.example/", "body": "fourth"},
    ]
    assert len(normalize_results(RESULTS, 2)) == 2
    assert normalize_results("nonsense", 5) == []


async def test_results_and_query_normalisation(clock: Clock) -> None:
    search_fn = Scripted(RESULTS)
    searcher = make(search_fn, clock)
    try:
        results = await searcher.search("  tokyo   weather ", 3)
    finally:
        searcher.close()
    assert [item["title"] for item in results] == ["One", "Two", ""]
    assert search_fn.calls == [("tokyo weather", 3)]


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_empty_query_returns_empty_list_without_searching(clock: Clock, query: str) -> None:
    search_fn = Scripted(RESULTS)
    searcher = make(search_fn, clock)
    try:
        assert await searcher.search(query, 5) == []
    finally:
        searcher.close()
    assert search_fn.calls == []


@pytest.mark.parametrize(("max_results", "expected"), [(None, 7), (0, 7), (-3, 7), (2, 2)])
async def test_tool_default_max_results_from_settings(
    clock: Clock, max_results: int | None, expected: int
) -> None:
    search_fn = Scripted(RESULTS)
    searcher = make(search_fn, clock)
    settings = Settings(_env_file=None, web_search_max_results=7)  # type: ignore[call-arg]
    try:
        await WebSearchTool(searcher, lambda: settings).web_search("q", max_results)
    finally:
        searcher.close()
    assert search_fn.calls == [("q", expected)]


async def test_max_results_is_capped(clock: Clock) -> None:
    search_fn = Scripted(RESULTS)
    searcher = make(search_fn, clock)
    try:
        await searcher.search("q", 10_000)
    finally:
        searcher.close()
    assert search_fn.calls == [("q", 20)]


async def test_identical_queries_are_cached_for_a_while(clock: Clock) -> None:
    search_fn = Scripted(RESULTS)
    searcher = make(search_fn, clock, cache_ttl=600)
    try:
        first = await searcher.search("q", 5)
        first[0]["title"] = "mutated by a caller"
        clock.now += 599
        assert (await searcher.search("q", 5))[0]["title"] == "One"
        await searcher.search("q", 4)
        assert len(search_fn.calls) == 2
        clock.now += 2
        await searcher.search("q", 5)
        assert len(search_fn.calls) == 3
    finally:
        searcher.close()


async def test_no_results_is_empty_and_a_failure_is_unavailable_and_logged(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    search_fn = Scripted(
        DDGSException("No results found."), ValueError("boom"), DDGSException("offline"), RESULTS
    )
    searcher = make(search_fn, clock)
    caplog.set_level(logging.WARNING, "bot.tools.web_search")
    try:
        assert await searcher.search("q", 5) == []  # ddgs's way of saying "nothing found"
        with pytest.raises(SearchUnavailable, match="ValueError"):
            await searcher.search("q", 5)
        with pytest.raises(SearchUnavailable, match="DDGSException"):
            await searcher.search("q", 5)
        assert len(await searcher.search("q", 5)) == 4  # failures are not cached, nor cooling
    finally:
        searcher.close()
    assert "web search failed: ValueError" in caplog.text
    assert "web search failed: DDGSException" in caplog.text


async def test_an_offline_search_is_a_failed_tool_call_the_model_can_act_on(clock: Clock) -> None:
    settings = Settings(_env_file=None, language="en")  # type: ignore[call-arg]
    tool = WebSearchTool(make(Scripted(DDGSException("offline")), clock), lambda: settings)
    registry = ToolRegistry()
    registry.register(tool.web_search, display=DISPLAY, sources=web_search_sources)
    result = await registry.execute("web_search", {"query": "playchat"})
    assert result.failed and result.sources == ()
    assert result.text.startswith("Web search is unavailable right now (the search failed")
    assert "answer from what you know" in result.text


async def test_rate_limit_backs_off_with_a_growing_cooldown(clock: Clock) -> None:
    search_fn = Scripted(
        RatelimitException("202 Ratelimit"),
        RatelimitException("again"),
        RESULTS,
        DDGSException("https://html.duckduckgo.com/html 429 Too Many Requests"),
        RESULTS,
    )
    searcher = make(search_fn, clock, cooldown_initial=30, cooldown_max=100)
    try:
        with pytest.raises(SearchUnavailable, match="rate-limiting"):
            await searcher.search("a", 5)
        assert searcher.cooling_down
        with pytest.raises(SearchUnavailable, match="paused for 30 s"):
            await searcher.search("b", 5)  # not even tried
        assert len(search_fn.calls) == 1
        clock.now += 31
        with pytest.raises(SearchUnavailable):
            await searcher.search("c", 5)  # rate-limited again: 60 s now
        clock.now += 31
        with pytest.raises(SearchUnavailable, match="paused"):
            await searcher.search("d", 5)
        assert len(search_fn.calls) == 2
        clock.now += 30
        assert len(await searcher.search("e", 5)) == 4  # success resets the cooldown
        with pytest.raises(SearchUnavailable):
            await searcher.search("f", 5)  # 429 in words: 30 s again
        clock.now += 31
        assert len(await searcher.search("g", 5)) == 4
        assert len(search_fn.calls) == 5
    finally:
        searcher.close()


def test_rate_limit_detection() -> None:
    assert is_rate_limit(RatelimitException("x"))
    assert is_rate_limit(DDGSException("HTTP 429"))
    assert not is_rate_limit(DDGSException("No results found."))


async def test_a_hanging_search_is_cut_at_the_deadline(clock: Clock) -> None:
    release = threading.Event()

    def hanging(query: str, max_results: int) -> list[dict[str, Any]]:
        release.wait(10)
        return []

    searcher = WebSearch(search_fn=hanging, timeout=0.2, clock=clock)
    started = time.monotonic()
    try:
        with pytest.raises(SearchUnavailable, match=r"no answer within 0\.2 s"):
            await searcher.search("q", 5)
        assert time.monotonic() - started < 5
    finally:
        release.set()
        searcher.close()


async def test_real_ddgs_through_an_unreachable_loopback_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ddgs honours DDGS_PROXY: pointing it at a closed loopback port keeps it off the internet.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{port}")
    searcher = WebSearch(backend="duckduckgo", timeout=5)
    started = time.monotonic()
    try:
        with pytest.raises(SearchUnavailable):
            await searcher.search("python asyncio", 3)
    finally:
        searcher.close()
    assert time.monotonic() - started < 5


async def test_default_registry_works_standalone(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{port}")
    registry = default_registry()
    assert registry.names() == ["web_search", "scrape_url", "pdf_to_text", "search_and_fetch"]
    offline = await registry.execute("web_search", {"query": "python"})
    assert offline.failed and offline.sources == ()
    # Its own fetcher uses the strict policy: loopback is refused before any connection.
    result = await registry.execute("scrape_url", {"url": f"http://127.0.0.1:{port}/"})
    assert result.failed and result.text.startswith("Blocked URL: ")
    tool = registry.get("web_search")
    assert tool is not None and tool.icon == "🔎"
    assert tool.label({"query": "tokyo weather"}) == 'web_search "tokyo weather"'


async def test_search_after_close_is_unavailable(clock: Clock) -> None:
    searcher = WebSearch(search_fn=Scripted(RESULTS), clock=clock)
    searcher.close()
    with pytest.raises(SearchUnavailable):
        await searcher.search("q", 5)


async def test_search_hits_are_the_sources_of_a_call(clock: Clock) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    deps = ToolDeps(
        fetcher=SafeFetcher(FetchPolicy.strict()),
        settings=lambda: settings,
        runner=IsolatedRunner(),
        doc_cache=DocumentCache(),
        web_search=make(Scripted(RESULTS), clock),
    )
    registry = ToolRegistry()
    register_builtin_tools(registry, deps)
    try:
        result = await registry.execute("web_search", {"query": "numbers"})
    finally:
        await deps.close()
    assert not result.failed
    assert result.sources == (
        Source("One", "https://one.example/"),
        Source("Two", "https://two.example/"),
        Source("Four", "https://four.example/"),
    ), "hits without an address are no source"


# What ddgs raises offline (its resolver's debug text), as seen on a machine without DNS.
OFFLINE_DUMP = (
    "DNSError: DNSError('error sending request for url (https://html.duckduckgo.com/html/) > "
    "error resolving DNS > DNS error: no records found for Query { name: "
    'Name("html.duckduckgo.com."), query_type: A, query_class: IN }\')'
)


async def test_a_failed_search_is_one_short_warning(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    searcher = make(Scripted(DDGSException(OFFLINE_DUMP)), clock)
    caplog.set_level(logging.DEBUG)
    try:
        with pytest.raises(SearchUnavailable):
            await searcher.search("q", 5)
    finally:
        searcher.close()
    mine = [r for r in caplog.records if r.name.startswith("bot.")]
    assert [(r.levelname, r.getMessage()) for r in mine] == [
        (
            "WARNING",
            "web search failed: the search engine's name did not resolve (no network, or DNS "
            "blocked?)",
        )
    ]
    assert "query_class" not in caplog.text
