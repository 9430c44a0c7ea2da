"""Shared notes: pages users and the AI edit together, grouped in contiguous sections.

Used by the read_note / write_note tools, the context layers 2 and 2.5, the Discord /note
commands and the admin API. Input is validated here; ordering and atomicity live in
bot.store.repos.notes. Reorder policy: an order that would split a section is refused
(ValidationError, nothing changed) rather than silently regrouped, so a client's bug shows.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from bot.errors import ValidationError
from bot.store.repos.notes import NoteOutline, NoteOutlines, NotePage, NoteRepository
from bot.store.spaces import parse_space
from bot.utils.tasks import BackgroundTasks

__all__ = ["NoteOutline", "NoteOutlines", "NotePage", "NotesService"]

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 100
MAX_SECTION_CHARS = 100
MAX_CONTENT_CHARS = 100_000
MAX_SEARCH_RESULTS = 100

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")
_ID = re.compile(r"#?(\d{1,18})")


def clean_title(title: str) -> str:
    """A trimmed, single-line title of 1–100 characters, or ValidationError."""
    if not isinstance(title, str):
        raise ValidationError("A note title must be text.")
    text = title.strip()
    if not text:
        raise ValidationError("A note title cannot be empty.")
    if len(text) > MAX_TITLE_CHARS:
        raise ValidationError(f"A note title can have at most {MAX_TITLE_CHARS} characters.")
    if _CONTROL.search(text):
        raise ValidationError("A note title must be a single line without control characters.")
    return text


def clean_section(section: str) -> str:
    """A trimmed, single-line section name of at most 100 characters ('' = no section)."""
    if not isinstance(section, str):
        raise ValidationError("A section name must be text.")
    text = section.strip()
    if len(text) > MAX_SECTION_CHARS:
        raise ValidationError(f"A section name can have at most {MAX_SECTION_CHARS} characters.")
    if _CONTROL.search(text):
        raise ValidationError("A section name must be a single line without control characters.")
    return text


def check_content(content: str) -> str:
    """The body unchanged, or ValidationError when it is too long."""
    if not isinstance(content, str):
        raise ValidationError("A note body must be text.")
    if len(content) > MAX_CONTENT_CHARS:
        raise ValidationError(
            f"A note page can hold at most {MAX_CONTENT_CHARS:,} characters (got {len(content):,})."
        )
    return content


P = ParamSpec("P")
T = TypeVar("T")

# The page outline (titles, sections, previews) is read on every turn but changes rarely. This
# process's writes drop the cache at once; the age limit bounds what another process (e.g. a
# separate `python -m admin_api`) may leave unseen.
OUTLINE_CACHE_SECONDS = 30.0


def _invalidates(
    method: Callable[Concatenate[NotesService, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[NotesService, P], Coroutine[Any, Any, T]]:
    """Mark a write: the cached outline is dropped after it, whatever the outcome."""

    @functools.wraps(method)
    async def wrapper(service: NotesService, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await method(service, *args, **kwargs)
        finally:
            service.forget_cache()

    return wrapper


class NotesService:
    """Create, edit, order, group, link and move the note pages of a space.

    Every method takes the space first: pages, sections, order and titles are per space, and
    a session links only pages of its own space.
    """

    def __init__(
        self,
        repo: NoteRepository,
        *,
        clock: Callable[[], float] = time.monotonic,
        tasks: BackgroundTasks | None = None,
    ) -> None:
        self._repo = repo
        self._clock = clock
        self._tasks = tasks
        # (space, preview length) → (checked at, the space's note version, outline)
        self._outlines: dict[tuple[str, int], tuple[float, int, NoteOutlines]] = {}
        self._forgotten = 0  # counts `forget_cache` calls: a read begun before one is stale

    async def list_pages(self, space: str) -> list[NotePage]:
        """Every page of the space in position order."""
        return await self._repo.all(space)

    async def list_pages_all_spaces(self) -> list[NotePage]:
        """Every page of every space (operator view), by space, then position."""
        return await self._repo.all_spaces()

    async def space_of(self, page_id: int) -> str | None:
        """The space of a page (operator lookup by id); None when there is no such page."""
        return await self._repo.space_of(page_id)

    async def outline(self, space: str, preview_chars: int = 40) -> list[NoteOutline]:
        """Titles, sections and the first `preview_chars` characters of the space's pages."""
        return list(await self.outline_snapshot(space, preview_chars))

    async def outline_snapshot(self, space: str, preview_chars: int = 40) -> NoteOutlines:
        """`outline`, as the very object cached: the same one until the pages change, so a
        reader may keep what it derived from it.

        Another process may write too: once a cached outline is OUTLINE_CACHE_SECONDS old,
        the space's note version (drawn anew by every note write) is read, and the pages only
        when it changed. With background tasks that check runs after this call has returned
        the cached outline (no turn waits for it); without, here."""
        now = self._clock()
        key = (space, preview_chars)
        cached = self._outlines.get(key)
        if cached is not None and now - cached[0] < OUTLINE_CACHE_SECONDS:
            return cached[2]
        if cached is not None and self._tasks is not None:
            self._outlines[key] = (now, *cached[1:])  # one check per age limit
            self._tasks.spawn(self._check(key, now), name="notes-outline-check")
            return cached[2]
        return await self._check(key, now)

    async def _check(self, key: tuple[str, int], checked_at: float) -> NoteOutlines:
        """The cached outline of `key` if the space's version is unchanged, else read anew;
        kept unless one of this process's writes came meanwhile."""
        forgotten = self._forgotten
        version = await self._repo.version(key[0])
        cached = self._outlines.get(key)
        if cached is not None and cached[1] == version:
            items = cached[2]
        else:
            items = await self._repo.outline(*key)
            if cached is not None and cached[2] == items:
                items = cached[2]
        if forgotten == self._forgotten:
            self._outlines[key] = (checked_at, version, items)
        return items

    async def get(self, space: str, page_id: int) -> NotePage | None:
        """One page of the space by id."""
        return await self._repo.get(space, page_id)

    async def get_many(self, space: str, page_ids: Sequence[int]) -> list[NotePage]:
        """Pages of the space by id, in position order; unknown ids are skipped."""
        return await self._repo.by_ids(space, page_ids)

    async def find(self, space: str, title_or_id: str) -> NotePage | None:
        """The space's page with this exact title (case-insensitive), else this id ("#12")."""
        wanted = str(title_or_id).strip()
        if not wanted:
            return None
        folded = wanted.casefold()
        for item in await self.outline(space, 0):
            if item.title.casefold() == folded:
                return await self._repo.get(space, item.id)
        match = _ID.fullmatch(wanted)
        return await self._repo.get(space, int(match.group(1))) if match else None

    async def search_titles(self, space: str, prefix: str, limit: int = 25) -> list[NotePage]:
        """Pages whose title starts with `prefix`, then those containing it (autocomplete)."""
        limit = max(1, min(limit, MAX_SEARCH_RESULTS))
        needle = prefix.strip().casefold()
        items = await self.outline(space, 0)
        starts = [i.id for i in items if i.title.casefold().startswith(needle)]
        contains = [i.id for i in items if needle in i.title.casefold() and i.id not in starts]
        chosen = (starts + contains)[:limit]
        pages = {page.id: page for page in await self._repo.by_ids(space, chosen)}
        return [pages[pid] for pid in chosen if pid in pages]

    @_invalidates
    async def create(
        self, space: str, title: str, content: str = "", section: str = ""
    ) -> NotePage:
        """A new page at the end of its section; ConflictError when the title is taken."""
        page = await self._repo.create(
            space, clean_title(title), check_content(content), clean_section(section)
        )
        log.info("note page %d created in %s", page.id, space)
        return page

    @_invalidates
    async def update(
        self, space: str, page_id: int, *, title: str | None = None, content: str | None = None
    ) -> NotePage:
        """Change a page's title and/or body."""
        return await self._repo.update(
            space,
            page_id,
            title=None if title is None else clean_title(title),
            content=None if content is None else check_content(content),
        )

    @_invalidates
    async def append(self, space: str, page_id: int, text: str) -> NotePage:
        """Add `text` on a new line at the end of a page's body."""
        if not isinstance(text, str) or not text.strip():
            raise ValidationError("Nothing to append: the text is empty.")
        return await self._repo.append(space, page_id, text, MAX_CONTENT_CHARS)

    @_invalidates
    async def delete(self, space: str, page_id: int) -> bool:
        """Delete a page of the space; False when it did not exist there."""
        deleted = await self._repo.delete(space, page_id)
        if deleted:
            log.info("note page %d deleted from %s", page_id, space)
        return deleted

    @_invalidates
    async def move(self, space: str, page_id: int, to_space: str) -> NotePage:
        """Move a page to another space (end of its section there); its links are dropped."""
        parse_space(to_space)
        page = await self._repo.move(space, page_id, to_space)
        log.info("note page %d moved from %s to %s", page_id, space, to_space)
        return page

    @_invalidates
    async def set_section(self, space: str, page_id: int, section: str) -> list[NotePage]:
        """Move a page to the end of `section`; returns every page in the new order."""
        return await self._repo.set_section(space, page_id, clean_section(section))

    @_invalidates
    async def rename_section(self, space: str, old: str, new: str) -> int:
        """Relabel a section (onto an existing name: merge); returns the pages relabelled."""
        return await self._repo.rename_section(space, clean_section(old), clean_section(new))

    @_invalidates
    async def reorder(
        self, space: str, page_id: int, section: str, order: list[int]
    ) -> list[NotePage]:
        """Apply a full order of the space's page ids; `page_id` moves to `section` too.

        ValidationError (nothing changed) on a missing, unknown or duplicated id, or when the
        order would split a section.
        """
        if not isinstance(order, list) or not all(
            isinstance(pid, int) and not isinstance(pid, bool) for pid in order
        ):
            raise ValidationError("The order must be a list of note page ids.")
        return await self._repo.reorder(space, page_id, clean_section(section), order)

    def forget_cache(self, space: str | None = None) -> None:
        """Drop cached outlines (of one space, or all), e.g. after a purge."""
        self._forgotten += 1
        for key in [key for key in self._outlines if space is None or key[0] == space]:
            del self._outlines[key]

    async def linked_page_ids(self, space: str, session_id: str) -> list[int]:
        """Pages linked to a session (their bodies go into its prompt), by position."""
        return await self._repo.linked_ids(space, session_id)

    async def set_links(self, space: str, session_id: str, page_ids: list[int]) -> list[int]:
        """Replace a session's linked pages; unknown ids → ValidationError, nothing changed."""
        await self._repo.set_links(space, session_id, page_ids)
        return await self._repo.linked_ids(space, session_id)

    async def link(self, space: str, session_id: str, page_id: int) -> bool:
        """Link a page to a session of the same space; False when it already was."""
        return await self._repo.link(space, session_id, page_id)

    async def unlink(self, space: str, session_id: str, page_id: int) -> bool:
        """Unlink a page from a session; False when it was not linked."""
        return await self._repo.unlink(space, session_id, page_id)
