"""The `pdf_to_text` tool: PDF text by (page, offset-in-page) cursor, lossless paging."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bot.config import Settings
from bot.errors import ToolError
from bot.store.repos.attachments import AttachmentRepository
from bot.tools.core import ToolDisplay, short_url
from bot.tools.doc_cache import CachedDocument, CacheKey, DocumentCache
from bot.tools.extract import ExtractionError, PdfPages, looks_like_pdf, pdf_page_texts
from bot.tools.isolate import IsolatedRunner
from bot.tools.paging import (
    MAX_TOOL_RESULT_CHARS,
    PDF_RESUME_META,
    FittedPage,
    InvalidTokenError,
    PageLimitError,
    fit_page,
    make_token,
    parse_token,
)
from bot.tools.room import ResultRoom, room_for
from bot.tools.safe_http import FetchError, SafeFetcher, TooLargeError
from bot.tools.scrape import PAGE_LIMIT, fetched_url_sources, run_isolated

log = logging.getLogger(__name__)

ATTACHMENT_PREFIX = "attachment:"
PDF_TOO_LARGE = "PDF exceeds the configured size limit."
MISSING_SOURCE = (
    "Give url_or_path (an http(s) URL of a PDF or attachment:<file_id>), "
    "or continue_from with the next_token of the previous result."
)
LOCAL_PATH_REFUSED = (
    "Local files cannot be read: url_or_path must be an http(s) URL of a PDF or "
    "attachment:<file_id> of a file attached to this conversation."
)
NO_SESSION = "Attachments can only be read inside a conversation that has them."
ATTACHMENT_NOT_FOUND = "Attachment not found: {ref}."
NOT_A_PDF = "{source} is not a PDF."
PDF_FAILED = "Failed to read the PDF {source}: {reason}"
EMPTY_PDF = "The PDF {source} has no pages."
_ATTACHMENT_RE = re.compile(r"attachment:([A-Za-z0-9_-]{1,64})")
_WINDOWS_PATH_RE = re.compile(r"[A-Za-z]:[\\/]")


def attachment_key(space: str, session_id: str, attachment_id: str) -> CacheKey:
    """The document cache's key of a conversation's attachment read as a PDF."""
    return ("pdf", f"attachment:{space}:{session_id}:{attachment_id}")


class NotPdfError(ExtractionError):
    """The bytes are not a PDF at all; the message says which source."""


def page_segment(index: int, total: int, text: str) -> str:
    """One page as it appears in the returned text: a page marker line, then its text."""
    separator = "\n\n" if index else ""
    return f"{separator}[page {index + 1}/{total}]\n{text}"


def full_pdf_text(texts: list[str] | tuple[str, ...]) -> str:
    """The whole document as the pages of a complete read concatenate to."""
    return "".join(page_segment(index, len(texts), text) for index, text in enumerate(texts))


@dataclass(frozen=True)
class PdfCursor:
    """Where reading resumes: a page index and a character offset within that page's segment."""

    page_index: int
    page_char_offset: int


@dataclass(frozen=True)
class PdfWindow:
    """The text readable from a cursor in one call (at most max_pdf_pages pages)."""

    text: str
    start: PdfCursor
    segment_lengths: tuple[int, ...]
    total_pages: int

    def cursor_after(self, consumed: int) -> PdfCursor | None:
        """The cursor right after `consumed` characters of the window; None at document end."""
        remaining = self.start.page_char_offset + consumed
        page = self.start.page_index
        for length in self.segment_lengths:
            if remaining < length:
                return PdfCursor(page, remaining)
            remaining -= length
            page += 1
        return None if page >= self.total_pages else PdfCursor(page, 0)


async def ensure_pages(
    document: CachedDocument,
    key: CacheKey,
    cache: DocumentCache,
    runner: IsolatedRunner,
    *,
    start: int,
    count: int,
) -> None:
    """Parse (once) the pages [start, start + count) that the cached document lacks."""
    if document.raw is None:
        raise ExtractionError("the PDF bytes are no longer available.")
    if document.total_pages is not None:
        end = min(document.total_pages, start + count)
        missing = [index for index in range(start, end) if index not in document.pages]
        if not missing:
            return
        start, count = missing[0], missing[-1] + 1 - missing[0]
    pages: PdfPages = await run_isolated(runner, pdf_page_texts, document.raw, start, count)
    document.total_pages = pages.total_pages
    for offset, text in enumerate(pages.texts):
        document.pages[pages.start + offset] = text
    cache.resized(key)


def pdf_window(document: CachedDocument, cursor: PdfCursor, max_pages: int) -> PdfWindow:
    """The window of text from `cursor` over at most `max_pages` already-parsed pages."""
    total = document.total_pages or 0
    end = min(total, cursor.page_index + max_pages)
    segments = [
        page_segment(index, total, document.pages[index]) for index in range(cursor.page_index, end)
    ]
    if not segments or cursor.page_char_offset >= len(segments[0]):
        raise InvalidTokenError("it points past the end of the PDF")
    text = segments[0][cursor.page_char_offset :] + "".join(segments[1:])
    return PdfWindow(text, cursor, tuple(len(segment) for segment in segments), total)


async def read_pdf_page(
    document: CachedDocument,
    key: CacheKey,
    cache: DocumentCache,
    runner: IsolatedRunner,
    cursor: PdfCursor,
    *,
    max_pages: int,
    max_chars: int,
    token_for: Callable[[PdfCursor | None, int], str | None],
    prefix: str = "",
    limit: int = MAX_TOOL_RESULT_CHARS,
    max_tokens: int | None = None,
) -> tuple[FittedPage, PdfCursor | None]:
    """One result's worth of PDF text from `cursor`, and the cursor after it (None at the end).

    `token_for(cursor, consumed)` builds the next token for a resume cursor (None: the PDF
    is finished), or returns None when nothing follows.
    """
    max_pages = max(1, max_pages)
    await ensure_pages(document, key, cache, runner, start=cursor.page_index, count=max_pages)
    if document.total_pages == 0:
        raise NotPdfError(EMPTY_PDF.format(source=document.source))
    if cursor.page_index >= (document.total_pages or 0):
        raise InvalidTokenError("it points past the end of the PDF")
    window = pdf_window(document, cursor, max_pages)

    def next_token(consumed: int) -> str | None:
        return token_for(window.cursor_after(consumed), consumed)

    page = fit_page(
        window.text,
        max_chars,
        next_token,
        prefix=prefix,
        extra_meta=PDF_RESUME_META,
        limit=limit,
        max_tokens=max_tokens,
    )
    return page, window.cursor_after(page.consumed)


def pdf_token(source: str, cursor: PdfCursor | None) -> str | None:
    """The pdf_to_text token resuming `source` at `cursor` (None when the PDF is finished)."""
    if cursor is None:
        return None
    return make_token(
        "pdf_to_text",
        url=source,
        page_index=cursor.page_index,
        page_char_offset=cursor.page_char_offset,
    )


def classify_source(source: str) -> str:
    """'http', 'attachment' or 'local' for a url_or_path value; 'other' for other schemes."""
    lowered = source.lower()
    if lowered.startswith(("http://", "https://")):
        return "http"
    if lowered.startswith(ATTACHMENT_PREFIX):
        return "attachment"
    if lowered.startswith(("file:", "/", "~", ".", "\\")) or _WINDOWS_PATH_RE.match(source):
        return "local"
    return "local" if not urlsplit(source).scheme else "other"


def _start(
    url_or_path: str | None, continue_from: str | None, max_age: float
) -> tuple[str, PdfCursor]:
    """The source and position a call starts at: from its token, or the first page of a source."""
    if continue_from:
        try:
            payload = parse_token(continue_from, "pdf_to_text", max_age=max_age)
        except InvalidTokenError as exc:
            raise ToolError(str(exc)) from None
        return payload["url"], PdfCursor(payload["page_index"], payload["page_char_offset"])
    source = (url_or_path or "").strip()
    if not source:
        raise ToolError(MISSING_SOURCE)
    return source, PdfCursor(0, 0)


class PdfToText:
    """The `pdf_to_text` tool: remote PDFs and this session's attachments."""

    def __init__(
        self,
        *,
        fetcher: SafeFetcher,
        runner: IsolatedRunner,
        cache: DocumentCache,
        settings: Callable[[], Settings],
        attachments: AttachmentRepository | None = None,
    ) -> None:
        self._fetcher = fetcher
        self._runner = runner
        self._cache = cache
        self._settings = settings
        self._attachments = attachments

    async def pdf_to_text(
        self,
        url_or_path: str | None = None,
        max_chars: int | None = None,
        continue_from: str | None = None,
        session_id: str | None = None,
        space_id: str | None = None,
        *,
        result_room: ResultRoom | None = None,
    ) -> str:
        """Extract the text of a PDF, page by page, in parts that can be continued.

        Each page starts with a [page N/TOTAL] line. When the result ends with a page-info
        block saying has_more: true, call again with only continue_from set to its
        next_token; the newest token replaces earlier ones for the same PDF.

        Args:
            url_or_path: For the first call: an http(s) URL of a PDF, or attachment:<file_id>
                of a file attached to this conversation. Local paths are refused. Not needed
                with continue_from.
            max_chars: Maximum characters of text per part; 0, negative or omitted uses the
                configured default (8000). The whole result never exceeds 6000 characters.
            continue_from: The next_token from the previous pdf_to_text result for the same
                PDF; the PDF and position are taken from it.
        """
        settings = self._settings()
        source, cursor = _start(url_or_path, continue_from, settings.pagination_token_ttl)
        if max_chars is None or max_chars <= 0:
            max_chars = settings.fetch_max_chars
        owner = None if session_id is None or space_id is None else (space_id, session_id)
        key, loader = self._loader(source, owner, settings.max_fetch_mb * 1024 * 1024)
        room = room_for(result_room, settings.max_tool_result_chars)
        try:
            document, _ = await self._cache.get_or_load(key, loader)
            page, _ = await read_pdf_page(
                document,
                key,
                self._cache,
                self._runner,
                cursor,
                max_pages=settings.max_pdf_pages,
                max_chars=max_chars,
                token_for=lambda after, _consumed: pdf_token(source, after),
                limit=room.chars,
                max_tokens=room.tokens,
            )
        except TooLargeError:
            raise ToolError(PDF_TOO_LARGE) from None
        except (FetchError, InvalidTokenError, NotPdfError) as exc:
            raise ToolError(str(exc)) from None
        except ExtractionError as exc:
            raise ToolError(PDF_FAILED.format(source=source, reason=exc)) from None
        except PageLimitError:
            raise ToolError(PAGE_LIMIT) from None
        return page.text

    def _loader(
        self, source: str, owner: tuple[str, str] | None, max_bytes: int
    ) -> tuple[CacheKey, Callable[[], Awaitable[CachedDocument]]]:
        """The cache key and loader of a source (attachments of the (space, session) `owner`
        only); raises ToolError for sources never read."""
        kind = classify_source(source)
        if kind == "local":
            raise ToolError(LOCAL_PATH_REFUSED)
        if kind != "attachment":
            return ("pdf", source), self._url_loader(source, max_bytes)
        match = _ATTACHMENT_RE.fullmatch(source)
        if match is None:
            raise ToolError(ATTACHMENT_NOT_FOUND.format(ref=source[:80]))
        if owner is None or self._attachments is None:
            raise ToolError(NO_SESSION)
        key = attachment_key(owner[0], owner[1], match.group(1))
        return key, self._attachment_loader(owner, match.group(1), max_bytes)

    def _url_loader(self, url: str, max_bytes: int) -> Callable[[], Awaitable[CachedDocument]]:
        async def load() -> CachedDocument:
            fetched = await self._fetcher.fetch(url, accept="application/pdf,*/*;q=0.5")
            if len(fetched.body) > max_bytes:
                raise TooLargeError(PDF_TOO_LARGE)
            if not looks_like_pdf(fetched.body):
                raise NotPdfError(NOT_A_PDF.format(source=url))
            return CachedDocument(
                source=url,
                final_url=fetched.final_url,
                content_type=fetched.content_type,
                size=len(fetched.body),
                raw=fetched.body,
            )

        return load

    def _attachment_loader(
        self, owner: tuple[str, str], attachment_id: str, max_bytes: int
    ) -> Callable[[], Awaitable[CachedDocument]]:
        async def load() -> CachedDocument:
            assert self._attachments is not None
            ref = f"{ATTACHMENT_PREFIX}{attachment_id}"
            found = await self._attachments.get(owner[0], owner[1], attachment_id)
            if found is None:
                raise FetchError(ATTACHMENT_NOT_FOUND.format(ref=ref))
            attachment, data = found
            if len(data) > max_bytes:
                raise TooLargeError(PDF_TOO_LARGE)
            if not looks_like_pdf(data):
                raise NotPdfError(NOT_A_PDF.format(source=ref))
            return CachedDocument(
                source=ref,
                final_url=ref,
                content_type=attachment.content_type,
                size=len(data),
                raw=data,
            )

        return load


def describe_pdf_to_text(args: dict[str, Any]) -> str:
    """UI label of a pdf_to_text call."""
    if args.get("continue_from"):
        return "pdf_to_text (continued)"
    return f"pdf_to_text {short_url(args.get('url_or_path'))}"


pdf_to_text_sources = fetched_url_sources("url_or_path")
DISPLAY = ToolDisplay("📄", describe_pdf_to_text)
