"""scrape_url end to end: real aiohttp fetcher, loopback web server, isolated parser worker."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from bot.config import Settings
from bot.tools.builtin import ToolDeps
from bot.tools.doc_cache import CachedDocument, DocumentCache
from bot.tools.extract import html_to_text
from bot.tools.isolate import IsolatedRunner
from bot.tools.paging import (
    MAX_TOOL_RESULT_CHARS,
    make_token,
    parse_paged_result,
    parse_token,
)
from bot.tools.registry import Source, default_registry
from bot.tools.safe_http import FetchPolicy, SafeFetcher
from bot.tools.scrape import INVALID_URL, NO_TEXT, PAST_END, ScrapeUrl
from bot.tools.web_search import WebSearch
from tests.fakes.web_server import FakeWebServer
from tests.tools.conftest import failure
from tests.tools.pdfgen import BOILERPLATE_MARKERS, make_article_page, make_pdf

pytestmark = pytest.mark.asyncio(loop_scope="module")

PREFIX = "Invalid continuation token: "


class Clock:
    """A clock tests move by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def settings_of(**overrides: Any) -> Settings:
    return Settings(_env_file=None, **overrides)  # type: ignore[call-arg]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def current() -> dict[str, Settings]:
    return {"settings": settings_of()}


@pytest.fixture
def tool(
    fetcher: SafeFetcher, runner: IsolatedRunner, clock: Clock, current: dict[str, Settings]
) -> ScrapeUrl:
    return ScrapeUrl(
        fetcher=fetcher,
        runner=runner,
        cache=DocumentCache(clock=clock),
        settings=lambda: current["settings"],
    )


def requests_for(web: FakeWebServer, path: str) -> int:
    return sum(1 for request in web.requests if request.path == path)


async def read_all(tool: ScrapeUrl, url: str, **kwargs: Any) -> tuple[list[str], list[str]]:
    """Follow next_token to the end; returns the bodies and the raw results."""
    bodies, results = [], []
    token: str | None = None
    for _ in range(500):
        result = await tool.scrape_url(url, continue_from=token, **kwargs)
        results.append(result)
        body, meta = parse_paged_result(result)
        bodies.append(body)
        if not meta["has_more"]:
            return bodies, results
        token = meta["next_token"]
    raise AssertionError("paging did not end")


async def test_round_trip_reassembles_the_full_text_with_one_fetch(
    tool: ScrapeUrl, web: FakeWebServer
) -> None:
    page = make_article_page(semantic=False, paragraphs=200)
    web.add_page("/long", page)
    expected = html_to_text(page.encode(), "utf-8", web.url_for("/long")).text
    assert len(expected) > 30_000
    bodies, results = await read_all(tool, web.url_for("/long"))
    assert "".join(bodies) == expected
    assert len(bodies) > 5
    assert all(len(result) <= MAX_TOOL_RESULT_CHARS for result in results)
    assert all(len(body) <= 4000 for body in bodies)
    assert requests_for(web, "/long") == 1
    assert not any(marker in "".join(bodies) for marker in BOILERPLATE_MARKERS)


async def test_short_page_has_no_footer(tool: ScrapeUrl, web: FakeWebServer) -> None:
    web.add_page("/short", "<html><body><article><p>Just this.</p></article></body></html>")
    assert await tool.scrape_url(web.url_for("/short")) == "Just this."


@pytest.mark.parametrize("url", ["", "   "])
async def test_empty_url_is_invalid(tool: ScrapeUrl, url: str) -> None:
    assert await failure(tool.scrape_url(url)) == INVALID_URL


@pytest.mark.parametrize("max_chars", [0, -5, None])
async def test_non_positive_max_chars_uses_the_setting_read_at_call_time(
    tool: ScrapeUrl, web: FakeWebServer, current: dict[str, Settings], max_chars: int | None
) -> None:
    web.add_page("/text", "word " * 3000, content_type="text/plain; charset=utf-8")
    current["settings"] = settings_of(scrape_max_chars=1234)
    body, meta = parse_paged_result(await tool.scrape_url(web.url_for("/text"), max_chars))
    assert len(body) == 1234
    assert parse_token(meta["next_token"], "scrape_url")["offset"] == 1234


async def test_large_max_chars_is_capped_by_the_result_limit(
    tool: ScrapeUrl, web: FakeWebServer
) -> None:
    web.add_page("/text", "x" * 50_000, content_type="text/plain")
    result = await tool.scrape_url(web.url_for("/text"), max_chars=100_000)
    assert len(result) == MAX_TOOL_RESULT_CHARS
    body, meta = parse_paged_result(result)
    assert parse_token(meta["next_token"], "scrape_url")["offset"] == len(body)


@pytest.mark.parametrize("limit", [2999, 3000, 9000])
async def test_the_result_limit_follows_max_tool_result_chars(
    tool: ScrapeUrl, web: FakeWebServer, current: dict[str, Settings], limit: int
) -> None:
    web.add_page("/text", "x" * 50_000, content_type="text/plain")
    current["settings"] = settings_of(max_tool_result_chars=limit)
    result = await tool.scrape_url(web.url_for("/text"), max_chars=100_000)
    assert len(result) == limit
    body, meta = parse_paged_result(result)
    assert parse_token(meta["next_token"], "scrape_url")["offset"] == len(body)


async def test_token_url_wins_over_the_argument(tool: ScrapeUrl, web: FakeWebServer) -> None:
    web.add_page("/a", "A" * 100, content_type="text/plain")
    web.add_page("/b", "B" * 100, content_type="text/plain")
    token = make_token("scrape_url", url=web.url_for("/a"), offset=40)
    assert await tool.scrape_url(web.url_for("/b"), continue_from=token) == "A" * 60
    assert requests_for(web, "/b") == 0


@pytest.mark.parametrize(("age", "ttl", "expired"), [(590, 600, False), (610, 600, True)])
async def test_tokens_expire_after_the_configured_time(
    tool: ScrapeUrl,
    web: FakeWebServer,
    current: dict[str, Settings],
    age: int,
    ttl: int,
    expired: bool,
) -> None:
    current["settings"] = settings_of(pagination_token_ttl=ttl)
    web.add_page("/t", "T" * 100, content_type="text/plain")
    issued = int(time.time()) - age
    token = make_token("scrape_url", url=web.url_for("/t"), offset=40, issued_at=issued)
    if not expired:
        assert await tool.scrape_url("", continue_from=token) == "T" * 60
        return
    message = await failure(tool.scrape_url("", continue_from=token))
    assert message.startswith(f"{PREFIX}expired (issued 10 min ago")
    assert message.endswith(", call the tool again without continue_from to start over.")
    assert requests_for(web, "/t") == 0


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest/meta-data", "http://10.0.0.1/", "ftp://example.com/x"],
)
async def test_blocked_urls(tool: ScrapeUrl, url: str) -> None:
    assert (await failure(tool.scrape_url(url))).startswith("Blocked URL: ")


async def test_strict_policy_blocks_loopback(runner: IsolatedRunner, web: FakeWebServer) -> None:
    web.add_page("/secret", "secret")
    async with SafeFetcher(FetchPolicy.strict()) as strict:
        tool = ScrapeUrl(fetcher=strict, runner=runner, cache=DocumentCache(), settings=settings_of)
        blocked = await failure(tool.scrape_url(web.url_for("/secret")))
        assert blocked.startswith("Blocked URL: ")
    assert web.requests == []


async def test_image_content_type_is_refused(tool: ScrapeUrl, web: FakeWebServer) -> None:
    web.add_page("/img", b"\x89PNG\r\n\x1a\n", content_type="image/png")
    result = await failure(tool.scrape_url(web.url_for("/img")))
    assert result.startswith("Failed to fetch ")
    assert "image/png" in result


async def test_http_error_is_a_fetch_failure(tool: ScrapeUrl, web: FakeWebServer) -> None:
    result = await failure(tool.scrape_url(web.url_for("/missing")))
    assert result == f"Failed to fetch {web.url_for('/missing')}: HTTP 404"


async def test_pdf_and_binary_content_are_pointed_elsewhere(
    tool: ScrapeUrl, web: FakeWebServer
) -> None:
    web.add_page("/doc", make_pdf(["hello"]), content_type="application/pdf")
    web.add_page("/bin", bytes(range(256)) * 4, content_type="application/zip")
    assert "pdf_to_text" in await failure(tool.scrape_url(web.url_for("/doc")))
    assert "is not text" in await failure(tool.scrape_url(web.url_for("/bin")))


async def test_source_served_as_octet_stream_is_read_as_text(
    tool: ScrapeUrl, web: FakeWebServer
) -> None:
    web.add_page("/x.py", "print('hi')\r\n", content_type="application/octet-stream")
    assert await tool.scrape_url(web.url_for("/x.py")) == "print('hi')\n"


@pytest.mark.parametrize(
    "token",
    [
        "garbage",
        "eyJ2IjoyfQ",
        "A" * 5000,
        make_token("pdf_to_text", url="https://e.com/a.pdf", page_index=0, page_char_offset=0),
    ],
)
async def test_bad_tokens(tool: ScrapeUrl, web: FakeWebServer, token: str) -> None:
    result = await failure(tool.scrape_url("https://example.com/", continue_from=token))
    assert result.startswith(PREFIX)
    assert web.requests == []


async def test_token_past_the_end(tool: ScrapeUrl, web: FakeWebServer) -> None:
    web.add_page("/t", "short text", content_type="text/plain")
    token = make_token("scrape_url", url=web.url_for("/t"), offset=999)
    assert await failure(tool.scrape_url("", continue_from=token)) == PAST_END


async def test_cache_expires_with_age(tool: ScrapeUrl, web: FakeWebServer, clock: Clock) -> None:
    web.add_page("/c", "cached", content_type="text/plain")
    assert await tool.scrape_url(web.url_for("/c")) == "cached"
    assert await tool.scrape_url(web.url_for("/c")) == "cached"
    assert requests_for(web, "/c") == 1
    clock.now += 1801
    assert await tool.scrape_url(web.url_for("/c")) == "cached"
    assert requests_for(web, "/c") == 2


async def test_concurrent_reads_share_one_fetch(tool: ScrapeUrl, web: FakeWebServer) -> None:
    web.add_page("/same", "<html><body><article><p>Shared.</p></article></body></html>")
    results = await asyncio.gather(*(tool.scrape_url(web.url_for("/same")) for _ in range(5)))
    assert results == ["Shared."] * 5
    assert requests_for(web, "/same") == 1


@pytest.mark.parametrize(
    "unit",
    [b"<div>", b"<div><!--</div>-->", b'<div title="</div>">'],
    ids=["plain", "comment", "attr"],
)
async def test_hostile_nested_html_is_refused_quickly(
    tool: ScrapeUrl, web: FakeWebServer, unit: bytes
) -> None:
    depth = 200_000
    web.add_page("/nested", b"<html><body>" + unit * depth + b"x" + b"</div>" * depth)
    started = time.monotonic()
    result = await failure(tool.scrape_url(web.url_for("/nested")))
    assert result == (
        f"Failed to extract text from {web.url_for('/nested')}: "
        "The page's HTML is nested too deeply to extract its text."
    )
    # The worker's deadline is 20 s; the refusal takes well under a second once it is warm.
    assert time.monotonic() - started < 5


async def test_parser_deadline_gives_an_error_and_the_tool_keeps_working(
    fetcher: SafeFetcher, web: FakeWebServer
) -> None:
    # A 3 MB page under a deadline far too short to parse it: the worker is killed.
    web.add_page("/big", make_article_page(semantic=True, paragraphs=8000))
    web.add_page("/ok", "fine", content_type="text/plain")
    slow = IsolatedRunner(timeout=0.05)
    try:
        tool = ScrapeUrl(fetcher=fetcher, runner=slow, cache=DocumentCache(), settings=settings_of)
        result = await failure(tool.scrape_url(web.url_for("/big")))
        assert result.startswith(f"Failed to extract text from {web.url_for('/big')}: ")
        assert "took longer" in result
        assert await tool.scrape_url(web.url_for("/ok")) == "fine"
    finally:
        await slow.close()


async def test_through_the_registry(
    fetcher: SafeFetcher, runner: IsolatedRunner, web: FakeWebServer
) -> None:
    web.add_page("/r", "registry text", content_type="text/plain")
    deps = ToolDeps(
        fetcher=fetcher,
        settings=settings_of,
        runner=runner,
        doc_cache=DocumentCache(),
        web_search=WebSearch(search_fn=lambda query, n: []),
    )
    registry = default_registry(deps)
    assert registry.names() == ["web_search", "scrape_url", "pdf_to_text", "search_and_fetch"]
    tool = registry.get("scrape_url")
    assert tool is not None and tool.paged and tool.icon == "🌐"
    assert tool.label({"url": web.url_for("/r")}) == "scrape_url 127.0.0.1/r"
    result = await registry.execute(
        "scrape_url", {"url": web.url_for("/r"), "session_id": "forged"}
    )
    assert result.text == "registry text" and not result.failed
    assert result.sources == (Source(web.url_for("/r"), web.url_for("/r")),)
    assert not result.has_more and result.next_token is None
    missing = await registry.execute("scrape_url", {"url": web.url_for("/gone")})
    assert missing.failed and missing.sources == ()
    assert missing.text == f"Failed to fetch {web.url_for('/gone')}: HTTP 404", "verbatim"
    web.add_page("/paged", "y" * 9000, content_type="text/plain")
    first = await registry.execute("scrape_url", {"url": web.url_for("/paged")})
    assert first.has_more and first.next_token is not None
    assert parse_token(first.next_token, "scrape_url")["offset"] == 4000
    assert first.text.endswith(f"next_token: {first.next_token}")
    deps.web_search.close()


# --- the document cache behind paging ----------------------------------------------------------


def doc(name: str, chars: int) -> CachedDocument:
    return CachedDocument(
        source=name, final_url=name, content_type="text/plain", size=chars, text="d" * chars
    )


async def test_cache_evicts_least_recently_used_by_bytes(clock: Clock) -> None:
    one = doc("a", 1000).footprint()
    cache = DocumentCache(max_bytes=3 * one, clock=clock)
    for name in "abc":
        cache.put(("t", name), doc(name, 1000))
    assert cache.get(("t", "a")) is not None  # a is now the most recent
    cache.put(("t", "d"), doc("d", 1000))
    assert [name for name in "abcd" if ("t", name) in cache] == ["a", "c", "d"]
    assert cache.total_bytes == 3 * one


async def test_cache_drops_documents_older_than_max_age(clock: Clock) -> None:
    cache = DocumentCache(max_age=1800, clock=clock)
    cache.put(("t", "a"), doc("a", 10))
    clock.now += 1800
    assert cache.get(("t", "a")) is not None
    clock.now += 1
    assert cache.get(("t", "a")) is None
    assert len(cache) == 0 and cache.total_bytes == 0


async def test_cache_accounts_for_growth_and_refuses_giants(clock: Clock) -> None:
    cache = DocumentCache(max_bytes=50_000, clock=clock)
    cache.put(("t", "giant"), doc("giant", 30_000))
    assert ("t", "giant") not in cache
    pdf = CachedDocument(
        source="p",
        final_url="p",
        content_type="application/pdf",
        size=100,
        raw=b"%PDF-" + b"0" * 100,
    )
    cache.put(("pdf", "p"), pdf)
    cache.put(("t", "small"), doc("small", 100))
    before = cache.total_bytes
    pdf.pages.update({index: "x" * 1000 for index in range(10)})
    cache.resized(("pdf", "p"))
    assert cache.total_bytes == before + 20_000
    pdf.pages.update({index: "x" * 1000 for index in range(10, 20)})
    cache.resized(("pdf", "p"))
    assert ("pdf", "p") in cache  # still fits: 40 KB of the 50 KB
    pdf.pages.update({index: "x" * 1000 for index in range(20, 30)})
    cache.resized(("pdf", "p"))
    assert ("pdf", "p") not in cache and ("t", "small") in cache


async def test_cache_single_flight_and_failures_are_not_cached(clock: Clock) -> None:
    cache = DocumentCache(clock=clock)
    release = asyncio.Event()
    calls: list[str] = []

    async def slow_load() -> CachedDocument:
        calls.append("load")
        await release.wait()
        return doc("a", 5)

    waiters = [asyncio.create_task(cache.get_or_load(("t", "a"), slow_load)) for _ in range(3)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*waiters)
    assert calls == ["load"]
    assert [loaded for _, loaded in results].count(True) == 1

    async def failing() -> CachedDocument:
        calls.append("fail")
        raise ValueError("nope")

    for _ in range(2):
        with pytest.raises(ValueError):
            await cache.get_or_load(("t", "b"), failing)
    assert calls.count("fail") == 2 and ("t", "b") not in cache


async def test_cache_waiter_loads_itself_when_the_loader_is_cancelled(clock: Clock) -> None:
    cache = DocumentCache(clock=clock)
    started = asyncio.Event()

    async def never() -> CachedDocument:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def quick() -> CachedDocument:
        return doc("a", 5)

    first = asyncio.create_task(cache.get_or_load(("t", "a"), never))
    await started.wait()
    second = asyncio.create_task(cache.get_or_load(("t", "a"), quick))
    await asyncio.sleep(0)
    first.cancel()
    document, loaded = await asyncio.wait_for(second, 5)
    assert loaded and document.source == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_page_without_text(tool: ScrapeUrl, web: FakeWebServer) -> None:
    web.add_page("/blank", "<html><head><title>x</title></head><body><script>x()</script></body>")
    result = await failure(tool.scrape_url(web.url_for("/blank")))
    assert result == NO_TEXT.format(url=web.url_for("/blank"))
