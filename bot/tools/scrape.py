"""The `scrape_url` tool: a page's main text, paged by characters."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from bot.config import Settings
from bot.errors import ToolError
from bot.tools.core import ToolDisplay, short_url
from bot.tools.doc_cache import CachedDocument, DocumentCache
from bot.tools.extract import ExtractionError, decode_text, html_to_text, looks_like_pdf
from bot.tools.isolate import IsolatedRunner, IsolationError
from bot.tools.paging import (
    InvalidTokenError,
    PageLimitError,
    fit_page,
    make_token,
    parse_token,
)
from bot.tools.room import ResultRoom, room_for
from bot.tools.safe_http import FetchedDocument, FetchError, SafeFetcher
from bot.turn.tool_result import Source, ToolResult

log = logging.getLogger(__name__)

T = TypeVar("T")

INVALID_URL = "Invalid URL."
NO_TEXT = "No readable text was found at {url}."
PAST_END = (
    "The continuation token points past the end of the page (it may have changed); "
    "call again without continue_from to start over."
)
IS_PDF = "{url} is a PDF; read it with pdf_to_text."
UNSUPPORTED_TYPE = "Cannot read {url}: {content_type} content is not text."
PAGE_LIMIT = "The result would not fit the tool result limit; retry with a smaller max_chars."
EXTRACTION_FAILED = "Failed to extract text from {url}: {reason}"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/typescript",
        "application/x-typescript",
        "application/x-python",
        "application/x-python-code",
        "application/x-sh",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/csv",
        "application/x-ndjson",
        "application/rss+xml",
        "application/atom+xml",
    }
)
# Servers often send source files and Markdown as octet-stream; accept them when they are text.
SNIFFED_TYPES = frozenset({"application/octet-stream", "binary/octet-stream", ""})


async def run_isolated(runner: IsolatedRunner, func: Callable[..., T], *args: Any) -> T:
    """Run a parser in the worker; its failures (or the worker's) become ExtractionError."""
    try:
        return await runner.run(func, *args)
    except ExtractionError:
        raise
    except IsolationError as exc:
        raise ExtractionError(str(exc) or "the parser failed.") from None
    except Exception as exc:
        # A parser library raised on hostile input: report it, keep the tool alive.
        log.warning("parser %s raised %s", getattr(func, "__name__", func), type(exc).__name__)
        raise ExtractionError(f"the content could not be parsed ({type(exc).__name__}).") from None


def looks_like_text(body: bytes) -> bool:
    """True for bytes that decode as UTF-8 and hold no NUL in their first 8 KB."""
    head = body[:8192]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the 8 KB boundary is still text.
        return exc.start >= len(head) - 3
    return True


def content_kind(document: FetchedDocument) -> str:
    """'html', 'text', 'pdf' or 'binary' for a fetched response."""
    content_type = document.content_type
    if content_type == "application/pdf" or looks_like_pdf(document.body[:1024]):
        return "pdf"
    if content_type in HTML_TYPES:
        return "html"
    if content_type.startswith("text/") or content_type in TEXT_TYPES:
        return "text"
    if content_type.endswith(("+json", "+xml")):
        return "text"
    if content_type in SNIFFED_TYPES and looks_like_text(document.body):
        return "text"
    return "binary"


async def extract_text(document: FetchedDocument, runner: IsolatedRunner) -> str:
    """The readable text of an HTML or text response; raises ExtractionError otherwise."""
    kind = content_kind(document)
    if kind == "html":
        try:
            extracted = await run_isolated(
                runner, html_to_text, document.body, document.charset, document.final_url
            )
        except ExtractionError as exc:
            raise ExtractionError(EXTRACTION_FAILED.format(url=document.url, reason=exc)) from None
        return extracted.text
    if kind == "text":
        text = decode_text(document.body, document.charset)
        return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    if kind == "pdf":
        raise ExtractionError(IS_PDF.format(url=document.url))
    raise ExtractionError(
        UNSUPPORTED_TYPE.format(url=document.url, content_type=document.content_type)
    )


class ScrapeUrl:
    """The `scrape_url` tool over a fetcher, the isolated parser and the document cache."""

    def __init__(
        self,
        *,
        fetcher: SafeFetcher,
        runner: IsolatedRunner,
        cache: DocumentCache,
        settings: Callable[[], Settings],
    ) -> None:
        self._fetcher = fetcher
        self._runner = runner
        self._cache = cache
        self._settings = settings

    async def scrape_url(
        self,
        url: str,
        max_chars: int | None = None,
        continue_from: str | None = None,
        result_room: ResultRoom | None = None,
    ) -> str:
        """Fetch a web page and return its main text (navigation, ads and footers removed).

        Long pages come in parts: when the result ends with a page-info block saying
        has_more: true, call again with continue_from set to its next_token to get the rest.

        Args:
            url: Absolute http(s) URL of the page.
            max_chars: Maximum characters of text per part; 0, negative or omitted uses the
                configured default (4000). The whole result never exceeds 6000 characters.
            continue_from: The next_token from the previous scrape_url result, to read the
                next part. When given, the URL stored in the token is used.
        """
        settings = self._settings()
        offset = 0
        if continue_from:
            try:
                payload = parse_token(
                    continue_from, "scrape_url", max_age=settings.pagination_token_ttl
                )
            except InvalidTokenError as exc:
                raise ToolError(str(exc)) from None
            url, offset = payload["url"], payload["offset"]
        else:
            url = (url or "").strip()
            if not url:
                raise ToolError(INVALID_URL)
        if max_chars is None or max_chars <= 0:
            max_chars = settings.scrape_max_chars
        try:
            text = await self.page_text(url)
        except (FetchError, ExtractionError) as exc:
            raise ToolError(str(exc)) from None
        if not text:
            raise ToolError(NO_TEXT.format(url=url))
        if offset >= len(text) and offset > 0:
            raise ToolError(PAST_END)

        def next_token(consumed: int) -> str | None:
            end = offset + consumed
            return make_token("scrape_url", url=url, offset=end) if end < len(text) else None

        room = room_for(result_room, settings.max_tool_result_chars)
        try:
            page = fit_page(
                text[offset:], max_chars, next_token, limit=room.chars, max_tokens=room.tokens
            )
        except PageLimitError:
            raise ToolError(PAGE_LIMIT) from None
        return page.text

    async def page_text(self, url: str) -> str:
        """A page's whole main text (parsed once, then from the cache while it is fresh).

        Raises FetchError when the page cannot be fetched, ExtractionError when it is not text.
        """
        document, _ = await self._cache.get_or_load(("scrape", url), lambda: self._load(url))
        return document.text or ""

    async def _load(self, url: str) -> CachedDocument:
        fetched = await self._fetcher.fetch(url, accept="text/html,application/xhtml+xml,*/*;q=0.8")
        text = await extract_text(fetched, self._runner)
        log.debug("scraped %s: %d bytes, %d chars", url, len(fetched.body), len(text))
        return CachedDocument(
            source=url,
            final_url=fetched.final_url,
            content_type=fetched.content_type,
            size=len(fetched.body),
            text=text,
        )


def describe_scrape_url(args: dict[str, Any]) -> str:
    """UI label of a scrape_url call."""
    more = " (continued)" if args.get("continue_from") else ""
    return f"scrape_url {short_url(args.get('url'))}{more}"


def fetched_url_sources(key: str) -> Callable[[dict[str, Any], ToolResult], list[Source]]:
    """A source reader listing the http(s) URL in argument `key` of a successful fetch."""

    def read(args: dict[str, Any], _result: ToolResult) -> list[Source]:
        url = args.get(key)
        if isinstance(url, str) and url.startswith("http"):
            return [Source(url, url)]
        return []

    return read


scrape_url_sources = fetched_url_sources("url")
DISPLAY = ToolDisplay("🌐", describe_scrape_url)
