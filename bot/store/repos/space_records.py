"""The `spaces` table: one row per space with its per-space settings; purging a space."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Final

from bot.errors import NotFoundError
from bot.store.engine.connection import Connection, Statement, utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.schema.tables import SPACE_TABLES
from bot.store.spaces import parse_space

log = logging.getLogger(__name__)

MAX_SPACE_NAME_CHARS: Final = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]")


@dataclass(frozen=True)
class SpaceRecord:
    """A row of `spaces`: the space and its per-space settings."""

    id: str
    kind: str
    name: str
    discord_id: int | None
    created_at: str
    left_at: str | None
    default_model: str | None
    language: str | None
    persona: str | None
    timezone: str | None


@dataclass(frozen=True)
class PurgeCounts:
    """How many rows of each table a purge removed."""

    counts: dict[str, int]

    @property
    def total(self) -> int:
        """Rows removed in all."""
        return sum(self.counts.values())


_COLUMNS = (
    "id, kind, name, discord_id, created_at, left_at, default_model, language, persona, timezone"
)
# Tables counted (and emptied) by a purge: every table with a space column (the schema's
# declaration); the cascade from `spaces` removes their rows, `api_logs` is deleted itself.
_PURGED_TABLES: Final = SPACE_TABLES

# What the operator's space list counts.
_COUNTED_TABLES: Final = ("sessions", "note_pages", "knowledge_entries")


def _record(row: Row) -> SpaceRecord:
    return SpaceRecord(**{key: row[key] for key in row.keys()})  # noqa: SIM118


def _clean_name(name: str) -> str:
    text = " ".join(_CONTROL.sub(" ", str(name)).split())
    return text[:MAX_SPACE_NAME_CHARS]


def space_row_statement(space_id: str, name: str = "") -> Statement:
    """The statement inserting the `spaces` row of `space_id` if missing (for a batch)."""
    space = parse_space(space_id)
    return Statement(
        "INSERT INTO spaces (id, kind, name, discord_id, created_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO NOTHING",
        (space.id, space.kind, _clean_name(name), space.discord_id, utcnow()),
    )


async def ensure_space_row(conn: Connection, space_id: str, name: str = "") -> None:
    """Insert the `spaces` row of `space_id` if missing (inside the caller's write)."""
    statement = space_row_statement(space_id, name)
    await conn.execute(statement.sql, statement.params)


class SpaceRepository:
    """Reads and writes `spaces`; purges every row of one space."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def ensure(self, space_id: str, name: str | None = None) -> SpaceRecord:
        """The space's row, created if missing; a given non-empty `name` replaces the old one."""
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space_id, name or "")
            if name:
                await conn.execute(
                    "UPDATE spaces SET name = ? WHERE id = ? AND name != ?",
                    (_clean_name(name), space_id, _clean_name(name)),
                )
        record = await self.get(space_id)
        assert record is not None
        return record

    async def get(self, space_id: str) -> SpaceRecord | None:
        """One space, if it has a row."""
        row = await self._db.fetchone(f"SELECT {_COLUMNS} FROM spaces WHERE id = ?", (space_id,))
        return None if row is None else _record(row)

    async def _set(self, space_id: str, column: str, value: str | None) -> SpaceRecord:
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space_id)
            await conn.execute(f"UPDATE spaces SET {column} = ? WHERE id = ?", (value, space_id))
        record = await self.get(space_id)
        assert record is not None
        return record

    async def rename(self, space_id: str, name: str) -> SpaceRecord:
        """Set the display name (a server's name as Discord shows it)."""
        return await self._set(space_id, "name", _clean_name(name))

    async def set_default_model(self, space_id: str, model: str | None) -> SpaceRecord:
        """The model new turns of this space use unless a session pins one (None: global)."""
        return await self._set(space_id, "default_model", model or None)

    async def set_timezone(self, space_id: str, zone: str | None) -> SpaceRecord:
        """The space's own time zone, an IANA name (None: UTC for days, UTC alone in times)."""
        return await self._set(space_id, "timezone", zone or None)

    async def set_language(self, space_id: str, language: str | None) -> SpaceRecord:
        """The space's language (None: the global setting)."""
        return await self._set(space_id, "language", language or None)

    async def set_persona(self, space_id: str, persona: str | None) -> SpaceRecord:
        """Extra system-prompt text for this space (None: none)."""
        return await self._set(space_id, "persona", persona or None)

    async def mark_left(self, space_id: str, at: str | None = None) -> None:
        """Record that the bot left the server (its data stays until purged)."""
        await self._db.execute(
            "UPDATE spaces SET left_at = ? WHERE id = ?", (at or utcnow(), space_id)
        )

    async def mark_returned(self, space_id: str) -> None:
        """The bot is back in the server: clear `left_at`."""
        await self._db.execute("UPDATE spaces SET left_at = NULL WHERE id = ?", (space_id,))

    async def left_before(self, cutoff: str) -> list[SpaceRecord]:
        """Spaces the bot left before `cutoff` (candidates for purging after N days)."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM spaces WHERE left_at IS NOT NULL AND left_at < ? "
            "ORDER BY left_at",
            (cutoff,),
        )
        return [_record(row) for row in rows]

    async def purge(self, space_id: str) -> PurgeCounts:
        """Delete every row of the space (and its `spaces` row), nothing of another space.

        Files (knowledge Markdown) are the caller's: see SpaceService.purge_space.
        """
        parse_space(space_id)
        async with self._db.transaction() as conn:
            counts: dict[str, int] = {}
            for table in _PURGED_TABLES:
                rows = list(
                    await conn.execute_fetchall(
                        f"SELECT COUNT(*) FROM {table} WHERE space_id = ?", (space_id,)
                    )
                )
                counts[table] = int(rows[0][0])
            # Sources follow their entries; every other table cascades from `spaces`.
            await conn.execute(
                "DELETE FROM knowledge_sources WHERE entry_id IN "
                "(SELECT id FROM knowledge_entries WHERE space_id = ?)",
                (space_id,),
            )
            await conn.execute("DELETE FROM api_logs WHERE space_id = ?", (space_id,))
            cursor = await conn.execute("DELETE FROM spaces WHERE id = ?", (space_id,))
            if cursor.rowcount == 0 and not any(counts.values()):
                raise NotFoundError(f"No space {space_id!r}.")
        log.info("space %s purged: %s", space_id, counts)
        return PurgeCounts(counts)

    async def counts(self) -> dict[str, dict[str, int]]:
        """Sessions, note pages and knowledge entries per space (spaces with none are absent)."""
        counts: dict[str, dict[str, int]] = {}
        for table in _COUNTED_TABLES:
            rows = await self._db.fetchall(
                f"SELECT space_id, COUNT(*) AS n FROM {table} GROUP BY space_id"
            )
            for row in rows:
                counts.setdefault(str(row["space_id"]), {})[table] = int(row["n"])
        return counts

    async def list(self) -> list[SpaceRecord]:
        """Every space (operator view), local first, then by kind and id."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM spaces ORDER BY kind = 'local' DESC, kind, id"
        )
        return [_record(row) for row in rows]
