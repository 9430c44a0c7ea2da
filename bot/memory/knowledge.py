"""Knowledge from web searches: summarised by the LLM, kept in SQLite and as Markdown files.

After a web_search, SaveKnowledgeHook (a ToolHook, inside the turn, shown to users as a
`save_knowledge` tool event) asks the LLM for a structured summary — a `# title` line and
bullet points — and stores it as a knowledge_entries row of the conversation's space with its
knowledge_sources and as knowledge_base/web_search/<space dir>/<yyyymmdd-hhmmss>-<slug>.md,
which the local KB (layer 3) indexes for that space only. Layer 1 lists the space's latest
headings; read_knowledge reads a body of the same space. An entry can be regenerated: its
sources are read again and summarised anew, under the same id.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.config import Settings
from bot.errors import LLMError, NotFoundError, UserFacingError
from bot.llm.types import Completer
from bot.prompts import prompts_for
from bot.prompts.languages import FALLBACK_LANGUAGE, Language, known_language
from bot.prompts.ui_text import ui_text
from bot.store.repos.knowledge import KnowledgeEntry, KnowledgeRepository, KnowledgeSource
from bot.store.spaces import SpaceScope, parse_space, space_dirname
from bot.turn.events import ToolEvent
from bot.turn.hooks import Emit, ToolOutcome

__all__ = [
    "KnowledgeEntry",
    "KnowledgeService",
    "KnowledgeSource",
    "RegenerateError",
    "SaveKnowledgeHook",
    "parse_summary",
    "slugify",
]

log = logging.getLogger(__name__)

WEB_SEARCH_DIR = "web_search"
SAVE_KNOWLEDGE_ID = "save_knowledge"
SAVE_KNOWLEDGE_ICON = "💾"
MAX_RESULTS = 10
MAX_SNIPPET_CHARS = 600
MAX_TITLE_CHARS = 200
MAX_QUERY_CHARS = 500
MAX_SUMMARY_CHARS = 20_000
MAX_SLUG_CHARS = 60
MAX_NAME_ATTEMPTS = 100
# web_search caches results for 10 minutes, so the same query within that window would only
# summarise the same hits again and fill layer 1 with duplicate headings.
REPEAT_WINDOW = timedelta(minutes=10)
# Page text a regeneration gives the model, shared evenly among the sources read (and never
# more than half the context window, in characters, so the request fits small windows too).
REGENERATE_CHARS = 6000

PageReader = Callable[[str], Awaitable[str]]


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[a-zA-Z]*\n(.*)\n```$", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


class RegenerateError(UserFacingError):
    """A knowledge entry could not be regenerated: its sources could not be read again."""


def _language(settings: Settings) -> Language:
    return known_language(settings.language) or FALLBACK_LANGUAGE


def _one_line(text: str, limit: int) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())[:limit].strip()


def slugify(query: str) -> str:
    """An ASCII file-name slug: [a-z0-9-], ≤ 60 chars; non-Latin queries get a short hash."""
    ascii_text = unicodedata.normalize("NFKD", query).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    slug = slug[:MAX_SLUG_CHARS].rstrip("-")
    if slug:
        return slug
    digest = hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"search-{digest}"


def parse_summary(text: str, query: str) -> tuple[str, str]:
    """(title, body) from the model's Markdown; no heading → the query, else the first line."""
    cleaned = _THINK.sub("", text).strip()
    fenced = _FENCE.match(cleaned)
    if fenced:
        cleaned = fenced.group(1).strip()
    lines = cleaned.splitlines()
    title = ""
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        heading = _HEADING.match(line.strip())
        if heading:
            title = heading.group(1)
            lines = lines[index + 1 :]
        break
    body = "\n".join(lines).strip()[:MAX_SUMMARY_CHARS]
    first_line = body.splitlines()[0].lstrip("-*# ") if body else ""
    for candidate in (title.strip("*_ "), query, first_line):
        if clean := _one_line(candidate, MAX_TITLE_CHARS):
            return clean, body
    return "(untitled)", body


def usable_results(results: Sequence[object]) -> list[dict[str, str]]:
    """Search hits with an http(s) link, as {title, href, body}, at most MAX_RESULTS.

    Anything else (non-dicts, other schemes, control characters in the link) is skipped.
    """
    usable: list[dict[str, str]] = []
    for item in results:
        if not isinstance(item, Mapping):
            continue
        href = str(item.get("href") or item.get("url") or "").strip()
        if not href.lower().startswith(("http://", "https://")) or _CONTROL.search(href):
            continue
        usable.append(
            {
                "title": _one_line(str(item.get("title") or href), 300),
                "href": href[:2048],
                "body": str(item.get("body") or item.get("snippet") or "")[:MAX_SNIPPET_CHARS],
            }
        )
        if len(usable) == MAX_RESULTS:
            break
    return usable


def _results_text(results: Sequence[Mapping[str, str]]) -> str:
    return "\n\n".join(
        f"[{number}] {item['title']}\n{item['href']}\n{item['body']}".strip()
        for number, item in enumerate(results, 1)
    )


def _markdown_link(source: KnowledgeSource) -> str:
    title = re.sub(r"([\[\]\\])", r"\\\1", source.title) or source.url
    url = source.url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"- [{title}]({url})"


def render_markdown(
    title: str, body: str, query: str, saved_at: datetime, sources: Sequence[KnowledgeSource]
) -> str:
    """The Markdown file of an entry: heading, query and date, body, sources."""
    parts = [
        f"# {title}",
        "",
        f"- query: {_one_line(query, MAX_QUERY_CHARS)}",
        f"- saved: {saved_at.strftime('%Y-%m-%d %H:%M UTC')}",
        "",
    ]
    if body:
        parts += [body, ""]
    if sources:
        parts += ["## Sources", "", *(_markdown_link(source) for source in sources), ""]
    return "\n".join(parts)


def _write_new_file(directory: Path, stem: str, text: str) -> Path:
    """Create directory/<stem>[-n].md exclusively; never overwrites, never leaves `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    root = directory.resolve()
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        name = f"{stem}.md" if attempt == 1 else f"{stem}-{attempt}.md"
        path = root / name
        if path.parent != root:
            raise ValueError(f"unsafe knowledge file name {name!r}")
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(text)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free file name for {stem!r} in {root}")


def _free_name(directory: Path, stem: str) -> Path:
    """directory/<stem>[-n].md that does not exist yet."""
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        path = directory / (f"{stem}.md" if attempt == 1 else f"{stem}-{attempt}.md")
        if not path.exists():
            return path
    raise FileExistsError(f"no free file name for {stem!r} in {directory}")


def _loose_markdown(directory: Path) -> list[str]:
    """Names of the .md files directly in `directory` (not in its sub-folders)."""
    if not directory.is_dir():
        return []
    return sorted(
        path.name for path in directory.iterdir() if path.suffix == ".md" and path.is_file()
    )


def _remove_markdown_dir(directory: Path) -> int:
    """Delete the .md files directly in `directory`, then the folder if it is empty."""
    removed = 0
    for name in _loose_markdown(directory):
        (directory / name).unlink(missing_ok=True)
        removed += 1
    # Not empty (someone put other files there) or already gone: keep it.
    with contextlib.suppress(OSError):
        directory.rmdir()
    return removed


class KnowledgeService:
    """Saves summarised web searches of a space and reads them back (layer 1,
    read_knowledge, admin); moves entries between spaces; purges a space's files."""

    def __init__(
        self,
        repo: KnowledgeRepository,
        gateway: Completer,
        kb_dir: Callable[[], Path] | Path,
        settings: Callable[[], Settings],
        *,
        on_files_changed: Callable[[], None] | None = None,
        read_page: PageReader | None = None,
    ) -> None:
        self._on_files_changed = on_files_changed
        self._read_page = read_page
        self._repo = repo
        self._gateway = gateway
        self._kb_dir = kb_dir
        self._settings = settings

    def _files_changed(self) -> None:
        if self._on_files_changed is not None:
            self._on_files_changed()

    def kb_dir(self) -> Path:
        """The knowledge-base directory in effect."""
        return self._kb_dir() if callable(self._kb_dir) else self._kb_dir

    def language(self) -> str:
        """The language ("ja" or "en") of prompts and labels right now."""
        return _language(self._settings())

    def web_root(self) -> Path:
        """The folder of every space's saved searches: <kb_dir>/web_search."""
        return self.kb_dir() / WEB_SEARCH_DIR

    def web_dir(self, space: str) -> Path:
        """Where a space's saved searches go: <kb_dir>/web_search/<space dir>."""
        return self.web_root() / space_dirname(space)

    async def save_search(
        self, space: str, query: str, results: list[dict[str, str]], *, session_id: str | None
    ) -> KnowledgeEntry | None:
        """Summarise search results into an entry, its sources and a Markdown file.

        One LLM call (purpose "knowledge"); the same query again within REPEAT_WINDOW returns
        the entry saved then, without a call. Returns None, logged, when there is nothing to
        save or the LLM fails; never raises into the turn.
        """
        try:
            return await self._save(space, query, results, session_id)
        except LLMError as exc:
            # The gateway already logged the failed call at WARNING.
            log.info("knowledge not saved, the LLM failed: %s", exc)
        except Exception:
            log.exception("knowledge not saved")
        return None

    async def _save(
        self, space: str, query: str, results: list[dict[str, str]], session_id: str | None
    ) -> KnowledgeEntry | None:
        hits = usable_results(results)
        query = _one_line(str(query), MAX_QUERY_CHARS)
        if not hits:
            log.debug("knowledge not saved: no usable search results")
            return None
        since = (datetime.now(UTC) - REPEAT_WINDOW).isoformat(timespec="microseconds")
        recent = await self._repo.recent_for_query(space, query, since)
        if recent is not None:
            log.debug("knowledge for this query was saved moments ago (entry %d)", recent.id)
            return recent
        completion = await self._gateway.complete(
            self._summary_messages(query, hits), session_id=session_id, purpose="knowledge"
        )
        if not _THINK.sub("", completion.text).strip():
            log.warning("knowledge not saved: the LLM returned an empty summary")
            return None
        title, body = parse_summary(completion.text, query)
        sources = list(
            {hit["href"]: KnowledgeSource(hit["title"], hit["href"]) for hit in hits}.values()
        )
        saved_at = datetime.now(UTC)
        md_path = await self._write_file(
            space, title, body, query, saved_at=saved_at, sources=sources
        )
        self._files_changed()
        try:
            entry = await self._repo.add(
                space,
                query=query,
                title=title,
                summary=body,
                session_id=session_id,
                md_path=md_path,
                sources=sources,
            )
        except BaseException:
            # Synchronous on purpose: this also runs on cancellation, where awaiting is unsafe.
            if md_path is not None:
                self._remove_file(space, md_path)
            raise
        log.info("knowledge entry %d saved in %s (%d sources)", entry.id, space, len(sources))
        return entry

    async def _write_file(
        self,
        space: str,
        title: str,
        body: str,
        query: str,
        *,
        saved_at: datetime,
        sources: Sequence[KnowledgeSource],
    ) -> str | None:
        """The new file's path relative to kb_dir, or None when it could not be written."""
        stem = f"{saved_at.strftime('%Y%m%d-%H%M%S')}-{slugify(query)}"
        text = render_markdown(title, body, query, saved_at, sources)
        directory = self.web_dir(space)
        try:
            path = await asyncio.to_thread(_write_new_file, directory, stem, text)
        except (OSError, ValueError) as exc:
            # The database row is still worth keeping without its file.
            log.warning("knowledge file not written: %s", exc)
            return None
        return f"{WEB_SEARCH_DIR}/{directory.name}/{path.name}"

    def _owned_file(self, space: str, md_path: str) -> Path | None:
        """The file of an entry, only if it is a .md directly inside the space's folder."""
        root = self.web_dir(space).resolve()
        target = (self.kb_dir() / md_path).resolve()
        if target.parent != root or target.suffix != ".md":
            return None
        return target

    def _remove_file(self, space: str, md_path: str) -> bool:
        target = self._owned_file(space, md_path)
        if target is None:
            log.warning("not removing %r: outside the space's web_search folder", md_path)
            return False
        try:
            target.unlink()
        except FileNotFoundError:
            return False
        return True

    async def regenerate(self, space: str, entry_id: int) -> KnowledgeEntry:
        """Summarise an entry again from its sources, read anew: same id, new title and body.

        The source pages are fetched again (through the web tools' safe fetch path) and their
        main text replaces the search snippets the entry was first made from. The entry gets
        a new Markdown file and the old one is removed. NotFoundError for an unknown entry,
        RegenerateError when no source can be read (or web fetching is off), LLMError when
        the model fails; the entry is left as it was then.
        """
        entry = await self._repo.get(space, entry_id)
        if entry is None:
            raise NotFoundError(f"Knowledge entry {entry_id} does not exist.")
        pages = await self._read_sources_again(entry)
        completion = await self._gateway.complete(
            self._summary_messages(entry.query, pages), session_id=None, purpose="knowledge"
        )
        if not _THINK.sub("", completion.text).strip():
            raise LLMError("The model returned an empty summary; the entry was left as it was.")
        title, body = parse_summary(completion.text, entry.query)
        updated = await self._replace(entry, title, body)
        log.info("knowledge entry %d regenerated from %d source(s)", entry_id, len(pages))
        return updated

    async def _read_sources_again(self, entry: KnowledgeEntry) -> list[dict[str, str]]:
        """The entry's readable sources as {title, href, body}, the body being page text."""
        read_page = self._read_page
        if read_page is None:
            raise RegenerateError("Web fetching is off here, so knowledge cannot be regenerated.")
        sources = entry.sources[:MAX_RESULTS]
        if not sources:
            raise RegenerateError(f"Knowledge entry #{entry.id} has no sources to read again.")

        async def read(source: KnowledgeSource) -> str:
            try:
                return (await read_page(source.url)).strip()
            except Exception as exc:
                # One page that is gone, blocked or not text leaves just that source out.
                log.info("knowledge source %s not read again: %s", source.url, exc)
                return ""

        texts = await asyncio.gather(*(read(source) for source in sources))
        readable = [(source, text) for source, text in zip(sources, texts, strict=True) if text]
        if not readable:
            raise RegenerateError(
                f"None of the {len(sources)} source(s) of knowledge entry #{entry.id} could be "
                "read again; the entry was left as it was."
            )
        budget = min(REGENERATE_CHARS, max(1, self._settings().llm_context_tokens // 2))
        share = max(1, budget // len(readable))
        return [
            {"title": source.title, "href": source.url, "body": text[:share]}
            for source, text in readable
        ]

    def _summary_messages(
        self, query: str, hits: Sequence[Mapping[str, str]]
    ) -> list[dict[str, Any]]:
        """The summarising request for `hits` (search results, or pages read again)."""
        prompts = prompts_for(self.language())
        return [
            {"role": "system", "content": prompts["knowledge_summary_system"]},
            {
                "role": "user",
                "content": prompts.format(
                    "knowledge_summary_user", query=query, results=_results_text(hits)
                ),
            },
        ]

    async def _replace(self, entry: KnowledgeEntry, title: str, body: str) -> KnowledgeEntry:
        """Store a regenerated text: a new Markdown file, the row pointed at it, the old file
        removed (the new file goes again if the row cannot be updated)."""
        saved_at = datetime.now(UTC)
        written = await self._write_file(
            entry.space_id,
            title,
            body,
            entry.query,
            saved_at=saved_at,
            sources=entry.sources,
        )
        # Without a new file the old one stays: stale text beats a row pointing nowhere.
        md_path = written or entry.md_path
        try:
            updated = await self._repo.replace(
                entry.space_id, entry.id, title=title, summary=body, md_path=md_path
            )
        except BaseException:
            if written is not None:
                self._remove_file(entry.space_id, written)
            raise
        if updated is None:
            if written is not None:
                self._remove_file(entry.space_id, written)
            raise NotFoundError(f"Knowledge entry {entry.id} does not exist.")
        if written is not None and entry.md_path and entry.md_path != written:
            try:
                await asyncio.to_thread(self._remove_file, entry.space_id, entry.md_path)
            except OSError as exc:
                log.warning("old knowledge file of entry %d not removed: %s", entry.id, exc)
        self._files_changed()
        return updated

    async def latest(self, space: str, limit: int) -> list[KnowledgeEntry]:
        """The space's newest `limit` entries, newest first."""
        return await self._repo.page(space, limit=limit, before_id=None)

    async def get(self, scope: SpaceScope, entry_id: int) -> KnowledgeEntry | None:
        """One entry of `scope` (ALL_SPACES: the operator's view) with its sources."""
        return await self._repo.get(scope, entry_id)

    async def delete(self, scope: SpaceScope, entry_id: int) -> bool:
        """Delete an entry of `scope`, its sources and its Markdown file (only inside its
        space's web_search folder)."""
        entry = await self._repo.delete(scope, entry_id)
        if entry is None:
            return False
        if entry.md_path:
            try:
                await asyncio.to_thread(self._remove_file, entry.space_id, entry.md_path)
            except OSError as exc:
                log.warning("knowledge file of entry %d not removed: %s", entry_id, exc)
            self._files_changed()
        log.info("knowledge entry %d deleted from %s", entry_id, entry.space_id)
        return True

    async def list(
        self, scope: SpaceScope, *, limit: int = 50, before_id: int | None = None
    ) -> list[KnowledgeEntry]:
        """Entries of `scope` newest first, paged by id (for the admin API and /knowledge)."""
        return await self._repo.page(scope, limit=max(1, min(limit, 500)), before_id=before_id)

    async def move(self, space: str, entry_id: int, to_space: str) -> KnowledgeEntry | None:
        """Give an entry (and its Markdown file) to another space; None when it is not in
        `space`. The file moves to the new space's folder; its session link is dropped."""
        parse_space(to_space)
        entry = await self._repo.get(space, entry_id)
        if entry is None:
            return None
        if to_space == space:
            return entry
        new_path = None
        if entry.md_path:
            new_path = await asyncio.to_thread(self._move_file, space, entry.md_path, to_space)
        moved = await self._repo.move(space, entry_id, to_space, new_path)
        if moved is None and new_path is not None:
            # The entry went away meanwhile: put the file back where its row expected it.
            await asyncio.to_thread(self._move_file, to_space, new_path, space)
        self._files_changed()
        log.info("knowledge entry %d moved from %s to %s", entry_id, space, to_space)
        return moved

    def _move_file(self, space: str, md_path: str, to_space: str) -> str | None:
        """Move an entry's file into `to_space`'s folder; its new relative path (None: gone)."""
        source = self._owned_file(space, md_path)
        if source is None or not source.is_file():
            return None
        target_dir = self.web_dir(to_space)
        target_dir.mkdir(parents=True, exist_ok=True)
        target = _free_name(target_dir, source.stem)
        source.rename(target)
        return f"{WEB_SEARCH_DIR}/{target_dir.name}/{target.name}"

    async def purge_files(self, space: str) -> int:
        """Delete every Markdown file of the space's web_search folder; returns how many."""
        removed = await asyncio.to_thread(_remove_markdown_dir, self.web_dir(space))
        if removed:
            self._files_changed()
        return removed

    async def relocate_files(self, local_space: str) -> int:
        """Move files saved before spaces (web_search/<name>.md) into their entry's space
        folder; files without an entry go to `local_space`. Idempotent; returns files moved."""
        legacy = await self._repo.files_to_relocate_all_spaces(WEB_SEARCH_DIR)
        moved = 0
        claimed: set[str] = set()
        for space, entry_id, md_path in legacy:
            claimed.add(md_path)
            new_path = await asyncio.to_thread(self._relocate, md_path, space)
            await self._repo.set_md_path(space, entry_id, new_path)
            moved += new_path is not None
        orphans = await asyncio.to_thread(_loose_markdown, self.web_root())
        for name in orphans:
            if f"{WEB_SEARCH_DIR}/{name}" not in claimed:
                moved += (
                    await asyncio.to_thread(self._relocate, f"{WEB_SEARCH_DIR}/{name}", local_space)
                    is not None
                )
        if moved:
            self._files_changed()
            log.info("knowledge files moved into their space folders: %d", moved)
        return moved

    def _relocate(self, md_path: str, space: str) -> str | None:
        source = (self.kb_dir() / md_path).resolve()
        if source.parent != self.web_root().resolve() or not source.is_file():
            return None
        target_dir = self.web_dir(space)
        target_dir.mkdir(parents=True, exist_ok=True)
        target = _free_name(target_dir, source.stem)
        source.rename(target)
        return f"{WEB_SEARCH_DIR}/{target_dir.name}/{target.name}"


def _search_hits(result: str) -> list[dict[str, str]]:
    """The hits of a web_search tool result's text (a JSON list), or [] for other text."""
    try:
        parsed = json.loads(result)
    except ValueError:
        return []
    if not isinstance(parsed, list):
        return []
    return [item for item in parsed if isinstance(item, dict)]


class SaveKnowledgeHook:
    """ToolHook: after a web_search with results, save them and show it as `save_knowledge`."""

    def __init__(self, knowledge: KnowledgeService, tool_name: str = "web_search") -> None:
        self._knowledge = knowledge
        self._tool_name = tool_name

    async def __call__(self, outcome: ToolOutcome, emit: Emit) -> None:
        """Save the search's results; emits running then done/error with the entry's title."""
        if outcome.name != self._tool_name or outcome.result.failed:
            return
        hits = usable_results(_search_hits(outcome.result.text))
        if not hits:
            return
        raw_query = outcome.arguments.get("query")
        query = raw_query if isinstance(raw_query, str) and raw_query.strip() else outcome.user_text
        language = self._knowledge.language()
        label = ui_text(language).knowledge_saving.format(query=_one_line(query, 80))
        emit(
            ToolEvent(
                SAVE_KNOWLEDGE_ID,
                SAVE_KNOWLEDGE_ID,
                "running",
                label=label,
                detail=json.dumps({"query": query}, ensure_ascii=False)[:200],
                icon=SAVE_KNOWLEDGE_ICON,
            )
        )
        entry = await self._knowledge.save_search(
            outcome.space_id, query, hits, session_id=outcome.session_id
        )
        if entry is None:
            emit(
                ToolEvent(
                    SAVE_KNOWLEDGE_ID,
                    SAVE_KNOWLEDGE_ID,
                    "error",
                    label=label,
                    result=ui_text(language).knowledge_save_failed,
                    icon=SAVE_KNOWLEDGE_ICON,
                )
            )
            return
        emit(
            ToolEvent(
                SAVE_KNOWLEDGE_ID,
                SAVE_KNOWLEDGE_ID,
                "done",
                label=label,
                result=entry.title,
                icon=SAVE_KNOWLEDGE_ICON,
            )
        )
