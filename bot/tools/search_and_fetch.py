"""The `search_and_fetch` tool: find files of one type and read them, page after page.

A page holds the candidates' files in order: when one file ends inside a page, the rest of the
page is filled from the next candidate, so only the last page is short. The continuation token
records exactly where the page ended (candidate index, offset in that file, PDF page cursor)
and carries the candidate list, so continuing never searches again.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from bot.config import Settings
from bot.errors import ToolError
from bot.prompts import Prompts, prompts_for
from bot.store.repos.attachments import AttachmentRepository
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
    page_footer,
    parse_token,
)
from bot.tools.pdf import NOT_A_PDF, NotPdfError, PdfCursor, ensure_pages, read_pdf_page
from bot.tools.room import ResultRoom, room_for
from bot.tools.safe_http import FetchError, SafeFetcher
from bot.tools.scrape import PAGE_LIMIT, extract_text
from bot.tools.web_search import MAX_RESULTS_CAP, SearchUnavailable, WebSearch, unavailable_error

log = logging.getLogger(__name__)

ALLOWED_FILE_TYPES = ("pdf", "csv", "txt", "md", "json", "html", "htm", "xml", "py", "js", "ts")
# Ends a block's metadata lines; the file's text follows (language-independent on purpose).
BODY_SEPARATOR = "---"
# Between one file's last text and the next file's block, which starts on a line of its own.
BLOCK_GAP = "\n\n"

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
    idx: int,
    candidate: Candidate,
    prompts: Prompts,
    *,
    mime: str,
    size: int,
    chars: int | None,
    pages: int | None,
) -> str:
    """The metadata lines of one file's block (labels in `prompts`' language), then `---`."""
    lines = [
        prompts.format("fetch_candidate", idx=idx + 1),
        prompts.format("fetch_url", url=candidate.href),
        prompts.format("fetch_title", title=candidate.title),
        prompts.format("fetch_type", mime=mime),
        prompts.format("fetch_size", size=size),
    ]
    if pages is not None:
        lines.append(prompts.format("fetch_pages", pages=pages))
    if chars is not None:
        lines.append(prompts.format("fetch_chars", chars=chars))
    lines.append(BODY_SEPARATOR)
    return "\n".join(lines) + "\n"


def failed_block_header(idx: int, candidate: Candidate, prompts: Prompts) -> str:
    """The metadata lines of a file that could not be read (shorter than any other header)."""
    lines = [
        prompts.format("fetch_candidate", idx=idx + 1),
        prompts.format("fetch_url", url=candidate.href),
        prompts.format("fetch_title", title=candidate.title),
        BODY_SEPARATOR,
    ]
    return "\n".join(lines) + "\n"


def split_block(text: str) -> tuple[str, str]:
    """A block's header and its text (the part after the first separator line)."""
    head, sep, body = text.partition(f"\n{BODY_SEPARATOR}\n")
    return (head, body) if sep else (text, "")


def _checked_request(query: str, file_type: str, prompts: Prompts) -> tuple[str, str]:
    """A new search's query (whitespace collapsed) and file type (lower case, no dot), or the
    tool's error when either is unusable."""
    query = " ".join((query or "").split())
    if not query:
        raise ToolError(prompts["fetch_empty_query"])
    file_type = (file_type or "").strip().lower().removeprefix(".")
    if file_type not in ALLOWED_FILE_TYPES:
        raise ToolError(prompts["fetch_invalid_type"])
    return query, file_type


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


@dataclass(frozen=True)
class _Call:
    """What stays fixed while one call fills its page."""

    max_chars: int
    settings: Settings
    # Characters the whole result may have (the tool's limit within the room the engine gave).
    limit: int
    prompts: Prompts
    # (space, session) whose attachments a fetched file is stored under; None: not stored.
    owner: tuple[str, str] | None


@dataclass(frozen=True)
class _Part:
    """One file's share of a page; `finished` when the file ended inside it."""

    page: FittedPage
    finished: bool


class SearchAndFetch:
    """The `search_and_fetch` tool: search by file type, read the candidates page by page."""

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

    async def search_and_fetch(  # noqa: PLR0917 - the model-facing schema
        self,
        query: str,
        file_type: str,
        max_results: int | None = None,
        max_chars: int | None = None,
        session_id: str | None = None,
        continue_from: str | None = None,
        space_id: str | None = None,
        result_room: ResultRoom | None = None,
    ) -> str:
        """Search the web for files of one type (PDF, CSV, code...) and return their text.

        Each file comes as a block with its URL, title, type and size before the text; when
        a file ends, the next file follows in the same result. When the result ends with a
        page-info block saying has_more: true, call again with continue_from set to its
        next_token for the rest.

        Args:
            query: Keywords describing the file to find.
            file_type: File extension to look for, one of pdf, csv, txt, md, json, html, htm,
                xml, py, js, ts.
            max_results: How many candidate files to read; 0, negative or omitted uses the
                configured default (3), which is also the maximum.
            max_chars: Maximum characters of one file's text per result; 0, negative or
                omitted uses the configured default (8000). A result never exceeds 6000
                characters.
            continue_from: The next_token from the previous search_and_fetch result; the
                candidate list is taken from it, no new search is made.
        """
        settings = self._settings()
        prompts = prompts_for(settings.language)
        if max_chars is None or max_chars <= 0:
            max_chars = settings.fetch_max_chars
        limit = max(1, settings.fetch_max_results)
        if continue_from:
            cursor = self._resumed_cursor(continue_from, limit, settings.pagination_token_ttl)
        else:
            query, file_type = _checked_request(query, file_type, prompts)
            wanted = limit if max_results is None or max_results <= 0 else min(max_results, limit)
            candidates = await self._candidates(query, file_type, wanted, settings.language)
            if not candidates:
                return prompts.format("fetch_no_candidates", file_type=file_type, query=query)
            cursor = _Cursor(candidates, file_type, 0, 0, PdfCursor(0, 0))
        try:
            owner = None if session_id is None or space_id is None else (space_id, session_id)
            # Blocks of several files are fitted by characters: one per token is safe.
            room = room_for(result_room, settings.max_tool_result_chars).safe_chars()
            return await self._page(cursor, _Call(max_chars, settings, room, prompts, owner))
        except InvalidTokenError as exc:
            raise ToolError(str(exc)) from None
        except PageLimitError:
            raise ToolError(PAGE_LIMIT) from None

    async def _candidates(
        self, query: str, file_type: str, wanted: int, language: str
    ) -> list[Candidate]:
        """Up to `wanted` files of `file_type` a web search finds for `query`, as many as a
        continuation token can carry."""
        try:
            results = await self._search.search(
                search_query(query, file_type), min(MAX_RESULTS_CAP, max(10, wanted * 3))
            )
        except SearchUnavailable as exc:
            raise unavailable_error(exc, language) from exc
        return fit_candidates(pick_candidates(results, file_type, wanted), file_type)

    @classmethod
    def _resumed_cursor(cls, token: str, limit: int, max_age: float) -> _Cursor:
        """Where the call with `token` continues; a bad or expired token is the tool's error."""
        try:
            return cls._cursor_from_token(token, max(limit, 10), max_age)
        except InvalidTokenError as exc:
            raise ToolError(str(exc)) from None

    @staticmethod
    def _cursor_from_token(token: str, max_matched: int, max_age: float) -> _Cursor:
        payload = parse_token(token, "search_and_fetch", max_matched=max_matched, max_age=max_age)
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

    async def _page(self, cursor: _Cursor, call: _Call) -> str:
        """One result: files from `cursor` on, until the page is full or no candidate is left.

        A file that ends inside the page is followed by the next candidate in the room left;
        the page stops inside a file (at max_chars of it, or where the room runs out) with a
        token for exactly that place.
        """
        blocks: list[str] = []
        ending = ""  # the page as it stands, footer included, should the next file not fit
        while True:
            done = "".join(block + BLOCK_GAP for block in blocks)
            room = call.limit - len(done)
            if blocks and room < self._smallest_part(cursor, call.prompts):
                return ending  # the next file cannot appear on this page: do not fetch it yet
            try:
                part = await self._read(cursor, call, room)
            except PageLimitError:
                if not blocks:
                    raise
                return ending
            following = cursor.file_idx + 1
            if not part.finished or following >= len(cursor.candidates):
                return done + part.page.text
            ending = done + part.page.text
            blocks.append(part.page.block)
            cursor = replace(cursor, file_idx=following, file_offset=0, pdf=PdfCursor(0, 0))

    def _smallest_part(self, cursor: _Cursor, prompts: Prompts) -> int:
        """A lower bound on the length of the current file's part: its shortest possible
        header, one character, and a footer unless it is the last candidate."""
        header = failed_block_header(cursor.file_idx, cursor.candidates[cursor.file_idx], prompts)
        following = self._next_file_token(cursor)
        if following is None:
            return len(header) + 1
        here = self._token(cursor, cursor.file_idx, 0, PdfCursor(0, 0))
        return len(header) + 1 + min(len(page_footer(here)), len(page_footer(following)))

    async def _read(self, cursor: _Cursor, call: _Call, limit: int) -> _Part:
        """The current file's part from the cursor, within `limit` characters."""
        candidate = cursor.candidates[cursor.file_idx]
        is_pdf = cursor.file_type == "pdf"
        key: CacheKey = ("pdf" if is_pdf else "file", candidate.href)
        try:
            document, _ = await self._cache.get_or_load(
                key, lambda: self._load(candidate.href, is_pdf)
            )
            if call.owner is not None:
                await self._store(document, call.owner, candidate.href, cursor.file_type)
            if is_pdf:
                return await self._read_pdf(cursor, document, key, call, limit)
        except (FetchError, ExtractionError) as exc:
            return self._failed(cursor, str(exc), call.prompts, limit)
        text = document.text or ""
        if cursor.file_offset > len(text) or (cursor.file_offset == len(text) and text):
            raise InvalidTokenError("it points past the end of the file")
        prefix = file_block_header(
            cursor.file_idx,
            candidate,
            call.prompts,
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

        page = fit_page(
            text[cursor.file_offset :], call.max_chars, next_token, prefix=prefix, limit=limit
        )
        return _Part(page, finished=cursor.file_offset + page.consumed >= len(text))

    async def _read_pdf(
        self, cursor: _Cursor, document: CachedDocument, key: CacheKey, call: _Call, limit: int
    ) -> _Part:
        max_pages = max(1, call.settings.max_pdf_pages)
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
            call.prompts,
            mime=document.content_type,
            size=document.size,
            chars=None,
            pages=document.total_pages,
        )

        def token_for(after: PdfCursor | None, consumed: int) -> str | None:
            if after is None:
                return self._next_file_token(cursor)
            return self._token(cursor, cursor.file_idx, cursor.file_offset + consumed, after)

        page, after = await read_pdf_page(
            document,
            key,
            self._cache,
            self._runner,
            cursor.pdf,
            max_pages=max_pages,
            max_chars=call.max_chars,
            token_for=token_for,
            prefix=prefix,
            limit=limit,
        )
        return _Part(page, finished=after is None)

    def _failed(self, cursor: _Cursor, reason: str, prompts: Prompts, limit: int) -> _Part:
        prefix = failed_block_header(cursor.file_idx, cursor.candidates[cursor.file_idx], prompts)
        next_token = self._next_file_token(cursor)
        body = prompts.format("fetch_failed", reason=reason)
        page = fit_page(body, len(body), lambda _consumed: next_token, prefix=prefix, limit=limit)
        return _Part(page, finished=page.consumed == len(body))

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
