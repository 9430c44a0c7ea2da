"""search_and_fetch end to end: injected search results pointing at the loopback web server."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from typing import Any

import pytest

from bot.config import Settings
from bot.prompts import prompts_for
from bot.store.repos.attachments import AttachmentRepository
from bot.tools.builtin import ToolDeps
from bot.tools.doc_cache import DocumentCache
from bot.tools.extract import pdf_page_texts
from bot.tools.isolate import IsolatedRunner
from bot.tools.paging import MAX_TOOL_RESULT_CHARS, make_token, parse_paged_result, parse_token
from bot.tools.pdf import full_pdf_text
from bot.tools.registry import default_registry
from bot.tools.safe_http import SafeFetcher
from bot.tools.search_and_fetch import (
    ALLOWED_FILE_TYPES,
    BLOCK_GAP,
    Candidate,
    SearchAndFetch,
    file_block_header,
    split_block,
)
from bot.tools.web_search import WebSearch
from tests.fakes.web_server import FakeWebServer
from tests.tools.conftest import SPACE, failure
from tests.tools.pdfgen import latin_page_text, make_pdf

pytestmark = pytest.mark.asyncio(loop_scope="module")

PREFIX = "Invalid continuation token: "
EN = prompts_for("en")
EMPTY_QUERY = EN["fetch_empty_query"]
INVALID_TYPE = EN["fetch_invalid_type"]
NO_CANDIDATES = EN["fetch_no_candidates"]
# Where a file's block starts inside a page: the page's start, or after the gap.
BLOCK_START = re.compile(r"(?:^|\n\n)(?==== Candidate \d+ ===\nURL: )")


def settings_of(**overrides: Any) -> Settings:
    values: dict[str, Any] = {"language": "en", **overrides}
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


class FakeSearch:
    """A search function returning fixed results and recording its calls (thread-safe)."""

    def __init__(self, results: list[dict[str, str]]) -> None:
        self.results = results
        self.queries: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __call__(self, query: str, max_results: int) -> list[dict[str, Any]]:
        with self._lock:
            self.queries.append((query, max_results))
        return [dict(result) for result in self.results]


@pytest.fixture
def current() -> dict[str, Settings]:
    return {"settings": settings_of(fetch_max_results=4)}


@pytest.fixture
def search() -> FakeSearch:
    return FakeSearch([])


@pytest.fixture
def web_search(search: FakeSearch) -> WebSearch:
    engine = WebSearch(search_fn=search)
    yield engine
    engine.close()


@pytest.fixture
def tool(
    fetcher: SafeFetcher,
    runner: IsolatedRunner,
    web_search: WebSearch,
    attachments: AttachmentRepository,
    current: dict[str, Settings],
) -> SearchAndFetch:
    return SearchAndFetch(
        fetcher=fetcher,
        runner=runner,
        cache=DocumentCache(),
        search=web_search,
        settings=lambda: current["settings"],
        attachments=attachments,
    )


def csv_text(name: str, rows: int) -> str:
    return "id,name,value\n" + "".join(f"{i},{name}-{i},{i * 7}\n" for i in range(rows))


def serve_csv_files(web: FakeWebServer, search: FakeSearch) -> dict[str, str]:
    """a.csv (long), b.csv (missing: 404), c.csv, d.csv; search results include noise."""
    files = {"/a.csv": csv_text("a", 900), "/c.csv": csv_text("c", 40), "/d.csv": csv_text("d", 5)}
    for path, text in files.items():
        web.add_page(path, text, content_type="text/csv; charset=utf-8")
    search.results = [
        {"title": "Page about data", "href": web.url_for("/data.html"), "body": "noise"},
        {"title": "A data", "href": web.url_for("/a.csv"), "body": "snippet"},
        {"title": "B data", "url": web.url_for("/b.csv"), "snippet": "gone"},
        {"title": "A again", "href": web.url_for("/a.csv"), "body": "duplicate"},
        {"title": "C data", "href": web.url_for("/c.csv?download=1"), "body": ""},
        {"title": "D data", "href": web.url_for("/d.csv"), "body": ""},
        {"title": "E data", "href": web.url_for("/e.csv"), "body": "over the limit"},
    ]
    return {web.url_for(path): text for path, text in files.items()}


async def read_all(tool: SearchAndFetch, query: str, file_type: str, **kwargs: Any) -> list[str]:
    results = [await tool.search_and_fetch(query, file_type, **kwargs)]
    for _ in range(500):
        _, meta = parse_paged_result(results[-1])
        if not meta["has_more"]:
            return results
        results.append(
            await tool.search_and_fetch("", "", continue_from=meta["next_token"], **kwargs)
        )
    raise AssertionError("paging did not end")


def blocks_of(result: str) -> list[str]:
    """The file blocks of one page, in order (the page-info footer left out)."""
    body, _ = parse_paged_result(result)
    return [block for block in BLOCK_START.split(body) if block]


def by_file(results: list[str]) -> dict[str, str]:
    """Reassemble each file's text from its blocks, keyed by URL."""
    texts: dict[str, str] = {}
    for result in results:
        for block in blocks_of(result):
            head, text = split_block(block)
            url = next(line[5:] for line in head.splitlines() if line.startswith("URL: "))
            texts[url] = texts.get(url, "") + text
    return texts


def requests_for(web: FakeWebServer, path: str) -> int:
    return sum(1 for request in web.requests if request.path == path)


async def test_reads_every_candidate_and_fills_pages_from_the_next_file(
    tool: SearchAndFetch,
    web: FakeWebServer,
    search: FakeSearch,
    attachments: AttachmentRepository,
) -> None:
    files = serve_csv_files(web, search)
    results = await read_all(
        tool, "sales data", "csv", max_chars=2000, session_id="s1", space_id=SPACE
    )
    assert search.queries == [("sales data filetype:csv", 12)]
    assert all(len(result) <= MAX_TOOL_RESULT_CHARS for result in results)
    texts = by_file(results)
    assert texts[web.url_for("/a.csv")] == files[web.url_for("/a.csv")]
    assert texts[web.url_for("/c.csv?download=1")] == files[web.url_for("/c.csv")]
    assert texts[web.url_for("/d.csv")] == files[web.url_for("/d.csv")]
    assert web.url_for("/e.csv") not in texts  # only fetch_max_results (4) candidates
    failed = texts[web.url_for("/b.csv")]
    assert (
        failed == f"This file could not be read: Failed to fetch {web.url_for('/b.csv')}: HTTP 404"
    )
    # One fetch per file although a.csv spans several pages.
    assert requests_for(web, "/a.csv") == 1
    # max_chars (2000) ends a page inside a.csv; the page where a.csv ends goes on with the
    # failed b.csv, then c.csv and d.csv, which all fit in the room left.
    pages = [[split_block(block)[0].splitlines()[0] for block in blocks_of(r)] for r in results]
    assert all(page == ["=== Candidate 1 ==="] for page in pages[:-1])
    assert pages[-1] == [f"=== Candidate {n} ===" for n in range(1, 5)]
    assert len(results) == -(-len(files[web.url_for("/a.csv")]) // 2000)
    stored = await attachments.list_for_session(SPACE, "s1")
    assert sorted(item.source_url or "" for item in stored) == sorted(
        [web.url_for("/a.csv"), web.url_for("/c.csv?download=1"), web.url_for("/d.csv")]
    )
    assert {item.filename for item in stored} == {"a.csv", "c.csv", "d.csv"}
    assert await attachments.list_for_session(SPACE, "s2") == []


def serve_texts(web: FakeWebServer, search: FakeSearch, texts: dict[str, str]) -> list[str]:
    """Serve each text as a .txt file and make them the search's candidates, in order."""
    for path, text in texts.items():
        web.add_page(path, text, content_type="text/plain; charset=utf-8")
    search.results = [{"title": path[1:], "href": web.url_for(path)} for path in texts]
    return [web.url_for(path) for path in texts]


def header_for(idx: int, url: str, title: str, text: str) -> str:
    candidate = Candidate(title, url)
    size = len(text.encode())
    return file_block_header(
        idx, candidate, EN, mime="text/plain", size=size, chars=len(text), pages=None
    )


async def test_pages_are_full_until_the_candidates_run_out(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch
) -> None:
    texts = {
        "/one.txt": "".join(f"one {i:05d}\n" for i in range(700)),
        "/two.txt": "two " * 300,
        "/three.txt": "".join(f"three {i:05d}\n" for i in range(900)),
        "/four.txt": "four",
    }
    urls = serve_texts(web, search, texts)
    results = await read_all(tool, "numbers", "txt")
    assert [len(result) for result in results[:-1]] == [MAX_TOOL_RESULT_CHARS] * (len(results) - 1)
    assert parse_paged_result(results[-1])[1] == {"has_more": False}
    reassembled = by_file(results)
    assert [reassembled[url] for url in urls] == list(texts.values()), "nothing lost or repeated"
    assert any(len(blocks_of(result)) > 1 for result in results)
    # Each token points exactly at the first character not yet delivered.
    delivered = dict.fromkeys(urls, "")
    for result in results[:-1]:
        for block in blocks_of(result):
            head, text = split_block(block)
            delivered[head.splitlines()[1].removeprefix("URL: ")] += text
        payload = parse_token(parse_paged_result(result)[1]["next_token"], "search_and_fetch")
        index, offset = payload["file_idx"], payload["file_offset"]
        wanted = list(texts.values())
        assert [delivered[url] for url in urls[:index]] == wanted[:index]
        assert len(delivered[urls[index]]) == offset
    for path in texts:
        assert requests_for(web, path) == 1


@pytest.mark.parametrize(("page_chars", "pages"), [(5999, 1), (6000, 1), (6001, 2)])
async def test_two_files_filling_a_page_at_the_limit(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch, page_chars: int, pages: int
) -> None:
    first = "a" * 1000
    urls = [web.url_for("/a.txt"), web.url_for("/b.txt")]
    fixed = len(header_for(0, urls[0], "a.txt", first)) + len(first) + len(BLOCK_GAP)
    second = "b" * (page_chars - fixed - len(header_for(1, urls[1], "b.txt", "b" * 4000)))
    serve_texts(web, search, {"/a.txt": first, "/b.txt": second})
    results = await read_all(tool, "letters", "txt")
    assert len(results) == pages
    if pages == 1:
        expected = (
            header_for(0, urls[0], "a.txt", first)
            + first
            + BLOCK_GAP
            + header_for(1, urls[1], "b.txt", second)
            + second
        )
        assert results[0] == expected and len(results[0]) == page_chars
    else:
        assert len(results[0]) == MAX_TOOL_RESULT_CHARS
        assert parse_paged_result(results[0])[1]["has_more"] is True
        assert by_file(results) == {urls[0]: first, urls[1]: second}


async def test_a_file_that_cannot_fit_is_not_fetched_for_this_page(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch
) -> None:
    paths = ["/a.txt", "/b.txt", "/c.txt"]
    urls = [web.url_for(path) for path in paths]
    matched = [{"title": path[1:], "href": url} for path, url in zip(paths, urls, strict=True)]
    to_b = make_token(
        "search_and_fetch",
        url=urls[1],
        offset=0,
        matched=matched,
        file_idx=1,
        file_offset=0,
        pdf_page_index=0,
        pdf_page_char_offset=0,
        file_type="txt",
    )
    footer = f"\n\n---page-info---\nhas_more: true\nnext_token: {to_b}"
    # Four-digit sizes either way, so the header's length does not depend on the text's.
    first = "a" * (MAX_TOOL_RESULT_CHARS - len(header_for(0, urls[0], "a.txt", "a" * 5000)))
    first = first[: len(first) - len(footer)]
    header = header_for(0, urls[0], "a.txt", first)
    serve_texts(web, search, {"/a.txt": first, "/b.txt": "b" * 50, "/c.txt": "c" * 50})
    page = await tool.search_and_fetch("letters", "txt")
    assert len(page) == MAX_TOOL_RESULT_CHARS
    body, meta = parse_paged_result(page)
    assert body == header + first
    payload = parse_token(meta["next_token"], "search_and_fetch")
    assert (payload["file_idx"], payload["file_offset"]) == (1, 0)
    assert requests_for(web, "/b.txt") == 0, "not fetched for a page it cannot appear on"
    rest = await tool.search_and_fetch("", "", continue_from=meta["next_token"])
    assert [split_block(block)[1] for block in blocks_of(rest)] == ["b" * 50, "c" * 50]


async def test_blocks_are_labelled_in_the_configured_language(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch, current: dict[str, Settings]
) -> None:
    current["settings"] = settings_of(language="ja")
    serve_texts(web, search, {"/x.txt": "本文です。"})
    page = await tool.search_and_fetch("x", "txt")
    head, text = split_block(page)
    assert head.splitlines() == [
        "=== 候補 1 ===",
        f"URL: {web.url_for('/x.txt')}",
        "タイトル: x.txt",
        "形式: text/plain",
        f"サイズ: {len('本文です。'.encode())} bytes",
        "文字数: 5",
    ]
    assert text == "本文です。"
    search.results = [{"title": "Gone", "href": web.url_for("/gone.txt")}]
    failed = await tool.search_and_fetch("gone", "txt")
    assert split_block(failed)[1].startswith("このファイルは読み込めませんでした: ")
    assert await failure(tool.search_and_fetch("", "txt")) == prompts_for("ja")["fetch_empty_query"]


async def test_expired_and_unstamped_tokens_are_refused(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch, current: dict[str, Settings]
) -> None:
    current["settings"] = settings_of(pagination_token_ttl=600)
    serve_texts(web, search, {"/x.txt": "x" * 9000})
    fields: dict[str, Any] = {
        "url": web.url_for("/x.txt"),
        "offset": 100,
        "matched": [{"title": "x", "href": web.url_for("/x.txt")}],
        "file_idx": 0,
        "file_offset": 100,
        "pdf_page_index": 0,
        "pdf_page_char_offset": 0,
        "file_type": "txt",
    }
    old = make_token("search_and_fetch", issued_at=int(time.time()) - 601, **fields)
    message = await failure(tool.search_and_fetch("", "", continue_from=old))
    assert message == (
        f"{PREFIX}expired (issued 10 min ago; tokens are valid for 10 min), "
        "call the tool again without continue_from to start over."
    )
    fresh = make_token("search_and_fetch", issued_at=int(time.time()) - 590, **fields)
    page = await tool.search_and_fetch("", "", continue_from=fresh)
    assert split_block(page)[1].startswith("x" * 100)
    assert web.requests, "a fresh token is read"

    # A token from before issue times were recorded: its age is unknown, so it has expired.
    raw = json.dumps({"v": 2, "tool": "search_and_fetch", **fields}).encode()
    unstamped = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert await failure(tool.search_and_fetch("", "", continue_from=unstamped)) == (
        f"{PREFIX}expired (it carries no issue time), "
        "call the tool again without continue_from to start over."
    )

    current["settings"] = settings_of(pagination_token_ttl=0)
    for token in (old, unstamped):
        page = await tool.search_and_fetch("", "", continue_from=token)
        assert split_block(page)[1].startswith("x" * 100), "0 means tokens never expire"


async def test_block_format(tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch) -> None:
    files = serve_csv_files(web, search)
    result = await tool.search_and_fetch("sales", "csv", max_results=1)
    url = web.url_for("/a.csv")
    text = files[url]
    body, meta = parse_paged_result(result)
    header = (
        f"=== Candidate 1 ===\nURL: {url}\nTitle: A data\nType: text/csv\n"
        f"Size: {len(text.encode())} bytes\nCharacters: {len(text)}\n---\n"
    )
    assert body.startswith(header)
    assert body == header + text[: len(body) - len(header)]
    assert meta["has_more"] is True


async def test_failed_last_candidate_ends_the_chain(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch
) -> None:
    search.results = [{"title": "Gone", "href": web.url_for("/gone.txt"), "body": ""}]
    result = await tool.search_and_fetch("x", "txt")
    assert result.endswith(
        f"This file could not be read: Failed to fetch {web.url_for('/gone.txt')}: HTTP 404"
    )
    assert "---page-info---" not in result


async def test_continuing_never_searches_again(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch
) -> None:
    serve_csv_files(web, search)
    first = await tool.search_and_fetch("sales", "csv", max_chars=500)
    token = parse_paged_result(first)[1]["next_token"]
    assert len(search.queries) == 1
    for _ in range(3):
        result = await tool.search_and_fetch("other", "pdf", continue_from=token, max_chars=500)
        token = parse_paged_result(result)[1]["next_token"]
    assert len(search.queries) == 1


async def test_pdf_files_across_candidates(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch
) -> None:
    long_pdf = make_pdf([latin_page_text(i, 300) for i in range(40)])
    short_pdf = make_pdf([latin_page_text(i, 20) for i in range(3)])
    web.add_page("/long.pdf", long_pdf, content_type="application/pdf")
    web.add_page("/html.pdf", "<html>not a pdf</html>")
    web.add_page("/short.pdf", short_pdf, content_type="application/pdf")
    search.results = [
        {"title": "Long", "href": web.url_for("/long.pdf")},
        {"title": "Fake", "href": web.url_for("/html.pdf")},
        {"title": "Short", "href": web.url_for("/short.pdf")},
    ]
    results = await read_all(tool, "manual", "pdf")
    texts = by_file(results)
    assert texts[web.url_for("/long.pdf")] == full_pdf_text(pdf_page_texts(long_pdf, 0, 99).texts)
    assert texts[web.url_for("/short.pdf")] == full_pdf_text(pdf_page_texts(short_pdf, 0, 9).texts)
    assert texts[web.url_for("/html.pdf")] == (
        f"This file could not be read: {web.url_for('/html.pdf')} is not a PDF."
    )
    assert "Pages: 40\n" in results[0]
    assert requests_for(web, "/long.pdf") == 1
    assert all(len(result) <= MAX_TOOL_RESULT_CHARS for result in results)


async def test_html_candidates_are_read_as_main_text(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch
) -> None:
    web.add_page("/p.htm", "<html><body><nav>menu</nav><article><p>Body.</p></article></body>")
    search.results = [{"title": "P", "href": web.url_for("/p.htm")}]
    result = await tool.search_and_fetch("p", "html")
    assert split_block(result)[1] == "Body."


async def test_no_candidates(tool: SearchAndFetch, search: FakeSearch) -> None:
    search.results = [{"title": "x", "href": "https://example.com/page.html", "body": ""}]
    assert await tool.search_and_fetch("budget", "pdf") == NO_CANDIDATES.format(
        file_type="pdf", query="budget"
    )


@pytest.mark.parametrize("query", ["", "   "])
async def test_empty_query(tool: SearchAndFetch, search: FakeSearch, query: str) -> None:
    assert await failure(tool.search_and_fetch(query, "pdf")) == EMPTY_QUERY
    assert search.queries == []


@pytest.mark.parametrize("file_type", ["", "exe", "pdfx", "docx", "p df"])
async def test_invalid_type(tool: SearchAndFetch, search: FakeSearch, file_type: str) -> None:
    assert await failure(tool.search_and_fetch("q", file_type)) == INVALID_TYPE
    assert search.queries == []


@pytest.mark.parametrize("file_type", [*ALLOWED_FILE_TYPES, ".PDF", " Csv "])
async def test_allowed_types(tool: SearchAndFetch, search: FakeSearch, file_type: str) -> None:
    result = await tool.search_and_fetch("q", file_type)
    normal = file_type.strip().lower().lstrip(".")
    assert result == NO_CANDIDATES.format(file_type=normal, query="q")
    assert search.queries[-1][0] == f"q filetype:{normal}"


@pytest.mark.parametrize(("max_results", "expected"), [(None, 4), (0, 4), (-1, 4), (2, 2), (50, 4)])
async def test_max_results_default_and_cap(
    tool: SearchAndFetch,
    web: FakeWebServer,
    search: FakeSearch,
    max_results: int | None,
    expected: int,
) -> None:
    serve_csv_files(web, search)
    result = await tool.search_and_fetch("q", "csv", max_results=max_results)
    token = parse_paged_result(result)[1]["next_token"]
    matched = parse_token(token, "search_and_fetch", max_matched=10)["matched"]
    assert len(matched) == expected
    assert set(matched[0]) == {"title", "href"}  # slim: no snippet in the token


@pytest.mark.parametrize(
    "token",
    [
        "x!",
        make_token("scrape_url", url="https://example.com/a.csv", offset=1),
        make_token(
            "search_and_fetch",
            url="https://example.com/a.csv",
            offset=0,
            matched=[{"title": "t", "href": "https://example.com/a.csv"}],
            file_idx=0,
            file_offset=0,
            pdf_page_index=0,
            pdf_page_char_offset=0,
            file_type="exe",
        ),
    ],
)
async def test_bad_tokens(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch, token: str
) -> None:
    result = await failure(tool.search_and_fetch("q", "csv", continue_from=token))
    assert result.startswith(PREFIX)
    assert search.queries == [] and web.requests == []


async def test_long_titles_and_urls_keep_tokens_small(
    tool: SearchAndFetch, web: FakeWebServer, search: FakeSearch, current: dict[str, Settings]
) -> None:
    current["settings"] = settings_of(fetch_max_results=10)
    web.add_page("/x.txt", "t" * 9000, content_type="text/plain")
    search.results = [
        {"title": "長い題名" * 100, "href": web.url_for("/x.txt") + f"?q={i}&pad=" + "p" * 400}
        for i in range(10)
    ]
    result = await tool.search_and_fetch("q", "txt")
    _, meta = parse_paged_result(result)
    payload = parse_token(meta["next_token"], "search_and_fetch", max_matched=10)
    assert 1 <= len(payload["matched"]) <= 10
    assert len(result) <= MAX_TOOL_RESULT_CHARS


async def test_session_id_is_injected_by_the_engine_only(
    fetcher: SafeFetcher,
    runner: IsolatedRunner,
    web_search: WebSearch,
    attachments: AttachmentRepository,
    web: FakeWebServer,
    search: FakeSearch,
) -> None:
    serve_csv_files(web, search)
    deps = ToolDeps(
        fetcher=fetcher,
        settings=lambda: settings_of(fetch_max_results=1),
        runner=runner,
        doc_cache=DocumentCache(),
        web_search=web_search,
        attachments=attachments,
    )
    registry = default_registry(deps)
    tool = registry.get("search_and_fetch")
    assert tool is not None
    assert "session_id" not in tool.schema["function"]["parameters"]["properties"]
    assert tool.icon == "🗂️"
    assert tool.label({"query": "sales", "file_type": "csv"}) == 'search_and_fetch csv "sales"'
    args = {"query": "sales", "file_type": "csv", "session_id": "s2"}
    result = await registry.execute(
        "search_and_fetch", args, injected={"session_id": "s1", "space_id": SPACE}
    )
    assert result.text.startswith("=== Candidate 1 ===") and not result.failed
    assert [item.source_url for item in await attachments.list_for_session(SPACE, "s1")] == [
        web.url_for("/a.csv")
    ]
    assert await attachments.list_for_session(SPACE, "s2") == []
