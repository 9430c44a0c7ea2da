"""The `search_and_fetch` tool: find files of one type and read them, one file per page."""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from bot.config import Settings
from bot.errors import ToolError
from bot.store.attachments import AttachmentRepository
from bot.tools.core import ToolDisplay, short_text
from bot.tools.doc_cache import CachedDocument, CacheKey, DocumentCache
from bot.tools.extract import ExtractionError, looks_like_pdf
from bot.tools.isolate import IsolatedRunner
from bot.tools.paging import (
    FittedPage,
    InvalidTokenError,
    PageLimitError,
    fit_page,
    make_token,
    parse_token,
)
from bot.tools.pdf import NOT_A_PDF, NotPdfError, PdfCursor, ensure_pages, read_pdf_page
from bot.tools.safe_http import FetchError, SafeFetcher
from bot.tools.scrape import PAGE_LIMIT, extract_text
from bot.tools.web_search import MAX_RESULTS_CAP, WebSearch

log = logging.getLogger(__name__)

ALLOWED_FILE_TYPES = ("pdf", "csv", "txt", "md", "json", "html", "htm", "xml", "py", "js", "ts")
# The seed's prompts fetch.empty_query and fetch.invalid_type.
EMPTY_QUERY = "The query is empty: give keywords describing the file to search for."
INVALID_TYPE = (
    "file_type must be one of: pdf, csv, txt, md, json, html, htm, xml, py, js, ts "
    "(the extension, without a dot)."
)
NO_CANDIDATES = "No {file_type} files were found for: {query}"

# The per-file block of the seed (English labels).
BLOCK_HEADER = "=== Candidate {idx} ==="
LABEL_URL = "URL: {url}"
LABEL_TITLE = "Title: {title}"
LABEL_TYPE = "Type: {mime}"
LABEL_SIZE = "Size: {size} bytes"
LABEL_CHARS = "Characters: {chars}"
LABEL_PAGES = "Pages: {pages}"
BODY_SEPARATOR = "---"
FAILED_TEXT = "This file could not be read: {reason}"

MAX_CANDIDATE_URL_CHARS = 512
MAX_CANDIDATE_TITLE_CHARS = 80
_EXTENSIONS = {"html": (".html", ".htm"), "htm": (".htm", ".html")}


def extensions_for(file_type: str) -> tuple[str, ...]:
    """URL path endings that count as a file of `file_type`."""
    return _EXTENSIONS.get(file_type, (f".{file_type}",))


def search_query(query: str, file_type: str) -> str:
    """The search engine query: the keywords plus a filetype: operator."""
    return f"{query} filetype:{file_type}"


@dataclass(frozen=True)
class Candidate:
    """A search result that looks like a file of the requested type."""

    title: str
    href: str


def pick_candidates(results: list[dict[str, str]], file_type: str, limit: int) -> list[Candidate]:
    """Results whose URL path ends with the type's extension, deduplicated, at most `limit`."""
    endings = extensions_for(file_type)
    picked: list[Candidate] = []
    seen: set[str] = set()
    for result in results:
        href = result.get("href", "").strip()
        if not href or len(href) > MAX_CANDIDATE_URL_CHARS or href in seen:
            continue
        if not href.isascii() or any(ch.isspace() for ch in href):
            continue
        parts = urlsplit(href)
        if parts.scheme not in ("http", "https") or not parts.path.lower().endswith(endings):
            continue
        seen.add(href)
        title = " ".join(result.get("title", "").split())[:MAX_CANDIDATE_TITLE_CHARS]
        picked.append(Candidate(title=title, href=href))
        if len(picked) >= limit:
            break
    return picked


def _worst_case_token(candidates: list[Candidate], file_type: str) -> str:
    last = len(candidates) - 1
    return make_token(
        "search_and_fetch",
        url=candidates[last].href,
        offset=10**9,
        matched=[{"title": c.title, "href": c.href} for c in candidates],
        file_idx=last,
        file_offset=10**9,
        pdf_page_index=10**6,
        pdf_page_char_offset=10**9,
        file_type=file_type,
    )


def fit_candidates(candidates: list[Candidate], file_type: str) -> list[Candidate]:
    """Shorten titles, then drop trailing candidates, until every token fits the size cap."""
    fitted = list(candidates)
    while fitted:
        try:
            _worst_case_token(fitted, file_type)
        except ValueError:
            pass
        else:
            return fitted
        if any(len(c.title) > 16 for c in fitted):
            fitted = [Candidate(c.title[:16], c.href) for c in fitted]
        else:
            fitted.pop()
    return fitted


def file_block_header(
    idx: int, candidate: Candidate, *, mime: str, size: int, chars: int | None, pages: int | None
) -> str:
    """The metadata lines of one file's block, ending with the separator line."""
    lines = [
        BLOCK_HEADER.format(idx=idx + 1),
        LABEL_URL.format(url=candidate.href),
        LABEL_TITLE.format(title=candidate.title),
        LABEL_TYPE.format(mime=mime),
        LABEL_SIZE.format(size=size),
    ]
    if pages is not None:
        lines.append(LABEL_PAGES.format(pages=pages))
    if chars is not None:
        lines.append(LABEL_CHARS.format(chars=chars))
    lines.append(BODY_SEPARATOR)
    return "\n".join(lines) + "\n"


def failed_block_header(idx: int, candidate: Candidate) -> str:
    """The metadata lines of a file that could not be read."""
    lines = [
        BLOCK_HEADER.format(idx=idx + 1),
        LABEL_URL.format(url=candidate.href),
        LABEL_TITLE.format(title=candidate.title),
        BODY_SEPARATOR,
    ]
    return "\n".join(lines) + "\n"


def split_block(text: str) -> tuple[str, str]:
    """A block's header and its text (the part after the first separator line)."""
    head, sep, body = text.partition(f"\n{BODY_SEPARATOR}\n")
    return (head, body) if sep else (text, "")


def _filename(href: str, file_type: str) -> str:
    name = posixpath.basename(unquote(urlsplit(href).path)).strip()
    return name[:200] if name else f"download.{file_type}"


@dataclass(frozen=True)
class _Cursor:
    candidates: list[Candidate]
    file_type: str
    file_idx: int
    file_offset: int
    pdf: PdfCursor


class SearchAndFetch:
    """The `search_and_fetch` tool: search by file type, fetch candidates one per page."""

    def __init__(
        self,
        *,
        fetcher: SafeFetcher,
        runner: IsolatedRunner,
        cache: DocumentCache,
        search: WebSearch,
        settings: Callable[[], Settings],
        attachments: AttachmentRepository | None = None,
    ) -> None:
        self._fetcher = fetcher
        self._runner = runner
        self._cache = cache
        self._search = search
        self._settings = settings
        self._attachments = attachments

    async def search_and_fetch(  # noqa: PLR0917 - the seed's schema
        self,
        query: str,
        file_type: str,
        max_results: int | None = None,
        max_chars: int | None = None,
        session_id: str | None = None,
        continue_from: str | None = None,
        space_id: str | None = None,
    ) -> str:
        """Search the web for files of one type (PDF, CSV, code...) and return their text.

        Returns one file per result, with its URL, title, type and size before the text.
        When the result ends with a page-info block saying has_more: true, call again with
        continue_from set to its next_token for the rest of the file or the next file.

        Args:
            query: Keywords describing the file to find.
            file_type: File extension to look for, one of pdf, csv, txt, md, json, html, htm,
                xml, py, js, ts.
            max_results: How many candidate files to read; 0, negative or omitted uses the
                configured default (3), which is also the maximum.
            max_chars: Maximum characters of a file's text per result; 0, negative or
                omitted uses the configured default (8000). A result never exceeds 6000
                characters.
            continue_from: The next_token from the previous search_and_fetch result; the
                candidate list is taken from it, no new search is made.
        """
        settings = self._settings()
        if max_chars is None or max_chars <= 0:
            max_chars = settings.fetch_max_chars
        limit = max(1, settings.fetch_max_results)
        if continue_from:
            try:
                cursor = self._cursor_from_token(continue_from, max(limit, 10))
            except InvalidTokenError as exc:
                raise ToolError(str(exc)) from None
        else:
            query = " ".join((query or "").split())
            if not query:
                raise ToolError(EMPTY_QUERY)
            file_type = (file_type or "").strip().lower().removeprefix(".")
            if file_type not in ALLOWED_FILE_TYPES:
                raise ToolError(INVALID_TYPE)
            wanted = limit if max_results is None or max_results <= 0 else min(max_results, limit)
            results = await self._search.search(
                search_query(query, file_type), min(MAX_RESULTS_CAP, max(10, wanted * 3))
            )
            candidates = fit_candidates(pick_candidates(results, file_type, wanted), file_type)
            if not candidates:
                return NO_CANDIDATES.format(file_type=file_type, query=query)
            cursor = _Cursor(candidates, file_type, 0, 0, PdfCursor(0, 0))
        try:
            owner = None if session_id is None or space_id is None else (space_id, session_id)
            page = await self._read(cursor, max_chars, settings, owner)
        except InvalidTokenError as exc:
            raise ToolError(str(exc)) from None
        except PageLimitError:
            raise ToolError(PAGE_LIMIT) from None
        return page.text

    @staticmethod
    def _cursor_from_token(token: str, max_matched: int) -> _Cursor:
        payload = parse_token(token, "search_and_fetch", max_matched=max_matched)
        if payload["file_type"] not in ALLOWED_FILE_TYPES:
            raise InvalidTokenError("field 'file_type' is not an allowed file type")
        candidates = [Candidate(item["title"], item["href"]) for item in payload["matched"]]
        return _Cursor(
            candidates,
            payload["file_type"],
            payload["file_idx"],
            payload["file_offset"],
            PdfCursor(payload["pdf_page_index"], payload["pdf_page_char_offset"]),
        )

    def _token(self, cursor: _Cursor, file_idx: int, file_offset: int, pdf: PdfCursor) -> str:
        return make_token(
            "search_and_fetch",
            url=cursor.candidates[file_idx].href,
            offset=file_offset,
            matched=[{"title": c.title, "href": c.href} for c in cursor.candidates],
            file_idx=file_idx,
            file_offset=file_offset,
            pdf_page_index=pdf.page_index,
            pdf_page_char_offset=pdf.page_char_offset,
            file_type=cursor.file_type,
        )

    def _next_file_token(self, cursor: _Cursor) -> str | None:
        following = cursor.file_idx + 1
        if following >= len(cursor.candidates):
            return None
        return self._token(cursor, following, 0, PdfCursor(0, 0))

    async def _read(
        self,
        cursor: _Cursor,
        max_chars: int,
        settings: Settings,
        owner: tuple[str, str] | None,
    ) -> FittedPage:
        candidate = cursor.candidates[cursor.file_idx]
        is_pdf = cursor.file_type == "pdf"
        key: CacheKey = ("pdf" if is_pdf else "file", candidate.href)
        try:
            document, _ = await self._cache.get_or_load(
                key, lambda: self._load(candidate.href, is_pdf)
            )
            if owner is not None:
                await self._store(document, owner, candidate.href, cursor.file_type)
            if is_pdf:
                return await self._read_pdf(cursor, document, key, max_chars, settings)
        except (FetchError, ExtractionError) as exc:
            return self._failed(cursor, str(exc))
        text = document.text or ""
        if cursor.file_offset > len(text) or (cursor.file_offset == len(text) and text):
            raise InvalidTokenError("it points past the end of the file")
        prefix = file_block_header(
            cursor.file_idx,
            candidate,
            mime=document.content_type,
            size=document.size,
            chars=len(text),
            pages=None,
        )

        def next_token(consumed: int) -> str | None:
            end = cursor.file_offset + consumed
            if end < len(text):
                return self._token(cursor, cursor.file_idx, end, PdfCursor(0, 0))
            return self._next_file_token(cursor)

        return fit_page(text[cursor.file_offset :], max_chars, next_token, prefix=prefix)

    async def _read_pdf(
        self,
        cursor: _Cursor,
        document: CachedDocument,
        key: CacheKey,
        max_chars: int,
        settings: Settings,
    ) -> FittedPage:
        max_pages = max(1, settings.max_pdf_pages)
        await ensure_pages(
            document,
            key,
            self._cache,
            self._runner,
            start=cursor.pdf.page_index,
            count=max_pages,
        )
        prefix = file_block_header(
            cursor.file_idx,
            cursor.candidates[cursor.file_idx],
            mime=document.content_type,
            size=document.size,
            chars=None,
            pages=document.total_pages,
        )

        def token_for(after: PdfCursor | None, consumed: int) -> str | None:
            if after is None:
                return self._next_file_token(cursor)
            return self._token(cursor, cursor.file_idx, cursor.file_offset + consumed, after)

        page, _ = await read_pdf_page(
            document,
            key,
            self._cache,
            self._runner,
            cursor.pdf,
            max_pages=max_pages,
            max_chars=max_chars,
            token_for=token_for,
            prefix=prefix,
        )
        return page

    def _failed(self, cursor: _Cursor, reason: str) -> FittedPage:
        prefix = failed_block_header(cursor.file_idx, cursor.candidates[cursor.file_idx])
        next_token = self._next_file_token(cursor)
        body = FAILED_TEXT.format(reason=reason)
        return fit_page(body, len(body), lambda consumed: next_token, prefix=prefix)

    async def _load(self, href: str, is_pdf: bool) -> CachedDocument:
        fetched = await self._fetcher.fetch(href)
        document = CachedDocument(
            source=href,
            final_url=fetched.final_url,
            content_type=fetched.content_type,
            size=len(fetched.body),
            raw=fetched.body,
        )
        if is_pdf:
            if not looks_like_pdf(fetched.body):
                raise NotPdfError(NOT_A_PDF.format(source=href))
            return document
        document.text = await extract_text(fetched, self._runner)
        return document

    async def _store(
        self, document: CachedDocument, owner: tuple[str, str], href: str, file_type: str
    ) -> None:
        """Save the fetched file to the session once (the cache remembers, the DB confirms)."""
        space_id, session_id = owner
        if self._attachments is None or session_id in document.stored_for:
            return
        document.stored_for.add(session_id)
        if document.raw is None:
            return
        try:
            existing = await self._attachments.list_for_session(space_id, session_id)
            if any(item.source_url == href for item in existing):
                return
            await self._attachments.add(
                space_id,
                session_id,
                _filename(href, file_type),
                document.content_type,
                document.raw,
                source_url=href,
            )
        except Exception as exc:
            document.stored_for.discard(session_id)
            log.warning("could not store fetched file as attachment: %s", type(exc).__name__)


def describe_search_and_fetch(args: dict[str, Any]) -> str:
    """UI label of a search_and_fetch call."""
    if args.get("continue_from"):
        return "search_and_fetch (continued)"
    file_type = short_text(args.get("file_type"), 8)
    return f'search_and_fetch {file_type} "{short_text(args.get("query"))}"'


DISPLAY = ToolDisplay("🗂️", describe_search_and_fetch)
