"""Shared note pages and their session links; every write keeps sections contiguous.

Order invariant: positions are 0..n-1 and the pages of one section are adjacent (the tab
strip and the prompt's "## section" grouping both assume it). Each write reads the current
order inside its own write transaction, computes the new order with the pure helpers below and
writes back only the rows that changed, so concurrent writers cannot interleave.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from bot.errors import ConflictError, NotFoundError, ValidationError
from bot.store.engine.connection import Connection, utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.repos.space_records import ensure_space_row

# A longer outline is read into tuples in a worker thread, not while holding the event loop.
OUTLINE_ON_LOOP = 2000

# (page id, section) in position order.
Slot = tuple[int, str]


@dataclass(frozen=True)
class NotePage:
    """One page (one tab) of a space's shared notes."""

    id: int
    space_id: str
    title: str
    content: str
    position: int
    section: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class NoteOutline:
    """A page without its body: what the title list in the prompt needs."""

    id: int
    title: str
    section: str
    position: int
    preview: str
    length: int


_COLUMNS = "id, space_id, title, content, position, section, created_at, updated_at"


def _page(row: Row) -> NotePage:
    return NotePage(
        id=row["id"],
        space_id=row["space_id"],
        title=row["title"],
        content=row["content"],
        position=row["position"],
        section=row["section"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def is_contiguous(slots: Sequence[Slot]) -> bool:
    """True when no section appears in two separate runs."""
    return split_section(slots) is None


def group_sections(slots: Sequence[Slot]) -> list[Slot]:
    """Stable grouping: sections in order of first appearance, pages keep their relative order."""
    groups: dict[str, list[Slot]] = {}
    for slot in slots:
        groups.setdefault(slot[1], []).append(slot)
    return [slot for group in groups.values() for slot in group]


def insert_at_section_end(slots: Sequence[Slot], slot: Slot) -> list[Slot]:
    """`slot` placed after the last page of its section, or at the very end for a new section."""
    result = list(slots)
    last = max((i for i, (_, section) in enumerate(result) if section == slot[1]), default=None)
    result.insert(len(result) if last is None else last + 1, slot)
    return result


def split_section(slots: Sequence[Slot]) -> str | None:
    """The first section that appears in two separate runs, if any."""
    finished: set[str] = set()
    current: str | None = None
    for _, section in slots:
        if section != current:
            if section in finished:
                return section
            if current is not None:
                finished.add(current)
            current = section
    return None


def _fold(title: str) -> str:
    return title.casefold()


# NoteOutline's fields in order: id, title, section, position, preview, length.
OutlineRow = tuple[int, str, str, int, str, int]


class NoteOutlines(Sequence[NoteOutline]):
    """A space's outline, held as plain tuples of text and numbers and made into NoteOutline
    items as they are read.

    A cached outline lives for many turns. CPython's collector stops tracking a tuple that holds
    only text and numbers, so 20,000 pages cost no full collection anything (as objects they
    made each one ~10 ms slower). Two outlines compare by value, as fast as tuples do.
    """

    __slots__ = ("rows",)

    def __init__(self, rows: tuple[OutlineRow, ...]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> NoteOutline: ...
    @overload
    def __getitem__(self, index: slice) -> list[NoteOutline]: ...
    def __getitem__(self, index: int | slice) -> NoteOutline | list[NoteOutline]:
        if isinstance(index, slice):
            return [NoteOutline(*row) for row in self.rows[index]]
        return NoteOutline(*self.rows[index])

    def __iter__(self) -> Iterator[NoteOutline]:
        return (NoteOutline(*row) for row in self.rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NoteOutlines) and other.rows == self.rows

    def __hash__(self) -> int:
        return hash(self.rows)


def _outline_rows(rows: Sequence[Row]) -> NoteOutlines:
    return NoteOutlines(tuple(tuple(row) for row in rows))


class NoteRepository:
    """Reads and writes the note_pages and session_note_pages of a space.

    Order, sections and title uniqueness are per space; a link joins a page and a session of
    the same space only (a foreign key on (space_id, id) refuses anything else).
    """

    def __init__(self, db: Database) -> None:
        self._db = db

    # ------------------------------------------------------------------ reads

    async def all(self, space: str) -> list[NotePage]:
        """Every page of the space in position order."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM note_pages WHERE space_id = ? ORDER BY position, id", (space,)
        )
        return [_page(row) for row in rows]

    async def all_spaces(self) -> list[NotePage]:
        """Every page of every space (operator view), by space, then position."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM note_pages ORDER BY space_id, position, id"
        )
        return [_page(row) for row in rows]

    async def space_of(self, page_id: int) -> str | None:
        """The space a page belongs to (operator lookup by id), None if there is no such page."""
        row = await self._db.fetchone("SELECT space_id FROM note_pages WHERE id = ?", (page_id,))
        return None if row is None else str(row["space_id"])

    async def get(self, space: str, page_id: int) -> NotePage | None:
        """One page of the space by id."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM note_pages WHERE space_id = ? AND id = ?", (space, page_id)
        )
        return None if row is None else _page(row)

    async def by_ids(self, space: str, page_ids: Sequence[int]) -> list[NotePage]:
        """The space's pages with these ids, in position order (unknown ids are skipped)."""
        if not page_ids:
            return []
        marks = ",".join("?" for _ in page_ids)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM note_pages WHERE space_id = ? AND id IN ({marks}) "
            "ORDER BY position, id",
            (space, *page_ids),
        )
        return [_page(row) for row in rows]

    async def outline(self, space: str, preview_chars: int) -> NoteOutlines:
        """Every page's title, section and first `preview_chars` characters, by position."""
        rows = await self._db.fetchall(
            "SELECT id, title, section, position, substr(content, 1, ?) AS preview, "
            "length(content) AS length FROM note_pages WHERE space_id = ? ORDER BY position, id",
            (max(0, preview_chars), space),
        )
        if len(rows) > OUTLINE_ON_LOOP:
            return await asyncio.to_thread(_outline_rows, rows)
        return _outline_rows(rows)

    async def version(self, space: str) -> int:
        """The number the space's last note write drew (0 before any): equal numbers, the
        same pages."""
        value = await self._db.scalar(
            "SELECT version FROM note_versions WHERE space_id = ?", (space,)
        )
        return int(value or 0)

    async def linked_ids(self, space: str, session_id: str) -> list[int]:
        """Ids of the pages linked to a session, in page position order."""
        rows = await self._db.fetchall(
            "SELECT p.id FROM session_note_pages l JOIN note_pages p "
            "ON p.space_id = l.space_id AND p.id = l.page_id "
            "WHERE l.space_id = ? AND l.session_id = ? ORDER BY p.position, p.id",
            (space, session_id),
        )
        return [int(row[0]) for row in rows]

    # ------------------------------------------------------------------ page writes

    async def create(self, space: str, title: str, content: str, section: str) -> NotePage:
        """Insert a page at the end of its section; ConflictError if the title is taken."""
        now = utcnow()
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space)
            await _ensure_title_free(conn, space, title, None)
            page_id = await conn.insert(
                "INSERT INTO note_pages (space_id, title, content, position, section, created_at, "
                "updated_at) VALUES (?, ?, ?, -1, ?, ?, ?)",
                (space, title, content, section, now, now),
            )
            slots = [slot for slot in await _slots(conn, space) if slot[0] != page_id]
            await _write_order(conn, space, insert_at_section_end(slots, (page_id, section)))
            await _changed(conn, space)
            return await _get(conn, space, page_id)

    async def update(
        self, space: str, page_id: int, *, title: str | None, content: str | None
    ) -> NotePage:
        """Change a page's title and/or body."""
        async with self._db.transaction() as conn:
            page = await _get(conn, space, page_id)
            if title is not None and title != page.title:
                await _ensure_title_free(conn, space, title, page_id)
            await conn.execute(
                "UPDATE note_pages SET title = ?, content = ?, updated_at = ? "
                "WHERE space_id = ? AND id = ?",
                (
                    page.title if title is None else title,
                    page.content if content is None else content,
                    utcnow(),
                    space,
                    page_id,
                ),
            )
            await _changed(conn, space)
            return await _get(conn, space, page_id)

    async def append(self, space: str, page_id: int, text: str, max_chars: int) -> NotePage:
        """Add `text` on a new line at the end of a page's body (atomically)."""
        async with self._db.transaction() as conn:
            page = await _get(conn, space, page_id)
            joiner = "" if not page.content or page.content.endswith("\n") else "\n"
            content = f"{page.content}{joiner}{text}"
            if len(content) > max_chars:
                raise ValidationError(
                    f"The page would exceed {max_chars:,} characters "
                    f"({len(content):,}); shorten it or start a new page."
                )
            await conn.execute(
                "UPDATE note_pages SET content = ?, updated_at = ? WHERE space_id = ? AND id = ?",
                (content, utcnow(), space, page_id),
            )
            await _changed(conn, space)
            return await _get(conn, space, page_id)

    async def delete(self, space: str, page_id: int) -> bool:
        """Delete a page (its session links go with it) and close the gap."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM note_pages WHERE space_id = ? AND id = ?", (space, page_id)
            )
            if cursor.rowcount == 0:
                return False
            await _write_order(conn, space, group_sections(await _slots(conn, space)))
            await _changed(conn, space)
            return True

    async def move(self, space: str, page_id: int, to_space: str) -> NotePage:
        """Move a page to the end of its section in `to_space`; its session links are dropped
        (they belong to conversations of the old space). ConflictError if the title is taken
        there."""
        if to_space == space:
            page = await self.get(space, page_id)
            if page is None:
                raise NotFoundError(f"No note page with id {page_id}.")
            return page
        async with self._db.transaction() as conn:
            page = await _get(conn, space, page_id)
            await ensure_space_row(conn, to_space)
            await _ensure_title_free(conn, to_space, page.title, None)
            await conn.execute(
                "DELETE FROM session_note_pages WHERE space_id = ? AND page_id = ?",
                (space, page_id),
            )
            await conn.execute(
                "UPDATE note_pages SET space_id = ?, position = -1, updated_at = ? "
                "WHERE space_id = ? AND id = ?",
                (to_space, utcnow(), space, page_id),
            )
            await _write_order(conn, space, group_sections(await _slots(conn, space)))
            slots = [slot for slot in await _slots(conn, to_space) if slot[0] != page_id]
            await _write_order(
                conn, to_space, insert_at_section_end(slots, (page_id, page.section))
            )
            await _changed(conn, space)
            await _changed(conn, to_space)
            return await _get(conn, to_space, page_id)

    # ------------------------------------------------------------------ order writes

    async def set_section(self, space: str, page_id: int, section: str) -> list[NotePage]:
        """Move a page to the end of `section` (a new section goes last); renumber all."""
        async with self._db.transaction() as conn:
            slots = await _slots(conn, space)
            current = next((slot for slot in slots if slot[0] == page_id), None)
            if current is None:
                raise NotFoundError(f"No note page with id {page_id}.")
            if current[1] != section:
                rest = [slot for slot in slots if slot[0] != page_id]
                await _write_order(conn, space, insert_at_section_end(rest, (page_id, section)))
            else:
                await _write_order(conn, space, group_sections(slots))
            await _changed(conn, space)
        return await self.all(space)

    async def rename_section(self, space: str, old: str, new: str) -> int:
        """Relabel every page of `old`; renaming onto an existing section merges into it."""
        async with self._db.transaction() as conn:
            slots = await _slots(conn, space)
            count = sum(1 for _, section in slots if section == old)
            if count == 0:
                raise NotFoundError(f"No note section named {old!r}.")
            if old != new:
                relabelled = [(pid, new if section == old else section) for pid, section in slots]
                await _write_order(conn, space, group_sections(relabelled))
                await _changed(conn, space)
            return count

    async def reorder(
        self, space: str, page_id: int, section: str, order: Sequence[int]
    ) -> list[NotePage]:
        """Apply a full client-computed order; refuses wrong id sets and split sections."""
        async with self._db.transaction() as conn:
            slots = await _slots(conn, space)
            sections = dict(slots)
            _check_order(order, sections)
            if page_id not in sections:
                raise NotFoundError(f"No note page with id {page_id}.")
            sections[page_id] = section
            wanted = [(pid, sections[pid]) for pid in order]
            split = split_section(wanted)
            if split is not None:
                label = split or "(no section)"
                raise ValidationError(
                    f"This order would split the section {label!r}: the pages of one section "
                    "must stay next to each other. Nothing was changed."
                )
            await _write_order(conn, space, wanted)
            await _changed(conn, space)
        return await self.all(space)

    # ------------------------------------------------------------------ session links

    async def set_links(self, space: str, session_id: str, page_ids: Sequence[int]) -> None:
        """Replace a session's linked pages (pages of the session's space only)."""
        unique = list(dict.fromkeys(page_ids))
        async with self._db.transaction() as conn:
            await _ensure_session(conn, space, session_id)
            known = await _existing_ids(conn, space, unique)
            unknown = [pid for pid in unique if pid not in known]
            if unknown:
                raise ValidationError(
                    f"Unknown note page id(s): {', '.join(map(str, unknown))}. Nothing changed."
                )
            await conn.execute(
                "DELETE FROM session_note_pages WHERE space_id = ? AND session_id = ?",
                (space, session_id),
            )
            now = utcnow()
            await conn.executemany(
                "INSERT INTO session_note_pages (space_id, session_id, page_id, created_at) "
                "VALUES (?, ?, ?, ?)",
                [(space, session_id, pid, now) for pid in unique],
            )

    async def link(self, space: str, session_id: str, page_id: int) -> bool:
        """Link a page to a session of the same space; False when it already was."""
        async with self._db.transaction() as conn:
            await _ensure_session(conn, space, session_id)
            await _get(conn, space, page_id)
            cursor = await conn.execute(
                "INSERT INTO session_note_pages (space_id, session_id, page_id, "
                "created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (space, session_id, page_id, utcnow()),
            )
            return cursor.rowcount > 0

    async def unlink(self, space: str, session_id: str, page_id: int) -> bool:
        """Remove a link; False when there was none."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM session_note_pages WHERE space_id = ? AND session_id = ? "
                "AND page_id = ?",
                (space, session_id, page_id),
            )
            return cursor.rowcount > 0


# ---------------------------------------------------------------------- helpers (inside a write)


async def _changed(conn: Connection, space: str) -> None:
    """Draw the space's note version anew (inside the write that changed its pages)."""
    await conn.execute(
        "INSERT INTO note_versions (space_id, version) VALUES (?, ?) "
        "ON CONFLICT (space_id) DO UPDATE SET version = excluded.version",
        (space, secrets.randbits(62)),
    )


async def _slots(conn: Connection, space: str) -> list[Slot]:
    rows = await conn.execute_fetchall(
        "SELECT id, section FROM note_pages WHERE space_id = ? ORDER BY position, id", (space,)
    )
    return [(int(row[0]), str(row[1])) for row in rows]


async def _get(conn: Connection, space: str, page_id: int) -> NotePage:
    rows = list(
        await conn.execute_fetchall(
            f"SELECT {_COLUMNS} FROM note_pages WHERE space_id = ? AND id = ?", (space, page_id)
        )
    )
    if not rows:
        raise NotFoundError(f"No note page with id {page_id}.")
    return _page(rows[0])


async def _write_order(conn: Connection, space: str, slots: Sequence[Slot]) -> None:
    """Store `slots` as the space's positions 0..n-1, touching only the rows that change."""
    rows = await conn.execute_fetchall(
        "SELECT id, position, section FROM note_pages WHERE space_id = ?", (space,)
    )
    current = {int(row[0]): (int(row[1]), str(row[2])) for row in rows}
    changes = [
        (index, section, page_id)
        for index, (page_id, section) in enumerate(slots)
        if current.get(page_id) != (index, section)
    ]
    if changes:
        await conn.executemany(
            "UPDATE note_pages SET position = ?, section = ? WHERE space_id = ? AND id = ?",
            [(index, section, space, page_id) for index, section, page_id in changes],
        )


async def _ensure_title_free(conn: Connection, space: str, title: str, own_id: int | None) -> None:
    rows = await conn.execute_fetchall(
        "SELECT id, title FROM note_pages WHERE space_id = ?", (space,)
    )
    wanted = _fold(title)
    for row in rows:
        if int(row[0]) != own_id and _fold(str(row[1])) == wanted:
            raise ConflictError(f"A note page titled {row[1]!r} already exists (id {row[0]}).")


async def _ensure_session(conn: Connection, space: str, session_id: str) -> None:
    rows = list(
        await conn.execute_fetchall(
            "SELECT 1 FROM sessions WHERE space_id = ? AND id = ?", (space, session_id)
        )
    )
    if not rows:
        raise NotFoundError(f"No conversation with id {session_id!r}.")


async def _existing_ids(conn: Connection, space: str, page_ids: Iterable[int]) -> set[int]:
    ids = list(page_ids)
    if not ids:
        return set()
    marks = ",".join("?" for _ in ids)
    rows = await conn.execute_fetchall(
        f"SELECT id FROM note_pages WHERE space_id = ? AND id IN ({marks})", (space, *ids)
    )
    return {int(row[0]) for row in rows}


def _check_order(order: Sequence[int], sections: dict[int, str]) -> None:
    """ValidationError unless `order` is exactly the current page ids, each once."""
    counts = Counter(order)
    seen = set(counts)
    duplicates = sorted(pid for pid, count in counts.items() if count > 1)
    missing = sorted(set(sections) - seen)
    extra = sorted(seen - set(sections))
    problems = []
    if duplicates:
        problems.append(f"duplicated: {', '.join(map(str, duplicates))}")
    if missing:
        problems.append(f"missing: {', '.join(map(str, missing))}")
    if extra:
        problems.append(f"unknown: {', '.join(map(str, extra))}")
    if problems:
        raise ValidationError(
            "The order must list every note page id exactly once ("
            + "; ".join(problems)
            + "). The pages may have changed meanwhile: reload and try again. Nothing was changed."
        )
