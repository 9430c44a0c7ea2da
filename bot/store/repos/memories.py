"""Long-term memory: summaries of archived messages, condensed when they outgrow a budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.engine.erase_lock import hold_against_erase
from bot.store.spaces import SpaceScope, in_space


@dataclass(frozen=True)
class Memory:
    """A summary of older messages (level 0) or of older summaries (level ≥ 1)."""

    id: int
    space_id: str
    session_id: str
    summary: str
    level: int
    condensed_into: int | None
    created_at: str


_COLUMNS = "id, space_id, session_id, summary, level, condensed_into, created_at"


def _memory(row: Row) -> Memory:
    # By position (the columns are _COLUMNS, in Memory's order): the long-term memory layer
    # reads a few hundred summaries per turn, and lookups by name were most of its CPU.
    return Memory(*row)


class MemoryRepository:
    """Stores summaries and archives what they replace, atomically."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def live(self, space: str, session_id: str, limit: int | None = None) -> list[Memory]:
        """Summaries in effect for a session (not condensed into another), oldest first;
        with `limit`, only the newest that many."""
        bound = "" if limit is None else f" LIMIT {int(limit)}"
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM memories WHERE space_id = ? AND session_id = ? "
            f"AND condensed_into IS NULL ORDER BY id DESC{bound}",
            (space, session_id),
        )
        return [_memory(row) for row in reversed(rows)]

    async def live_page(
        self, space: str, session_id: str, limit: int, before_id: int | None = None
    ) -> list[Memory]:
        """Up to `limit` live summaries of a session older than `before_id`, newest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM memories WHERE space_id = ? AND session_id = ? "
            "AND condensed_into IS NULL AND id < ? ORDER BY id DESC LIMIT ?",
            (space, session_id, before_id if before_id is not None else 2**62, int(limit)),
        )
        return [_memory(row) for row in rows]

    async def count_live(self, space: str, session_id: str) -> int:
        """How many summaries are in effect for a session."""
        count = await self._db.scalar(
            "SELECT COUNT(*) FROM memories WHERE space_id = ? AND session_id = ? "
            "AND condensed_into IS NULL",
            (space, session_id),
        )
        return int(count or 0)

    async def all_for_session(self, space: str, session_id: str) -> list[Memory]:
        """Every summary of a session, condensed ones included."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM memories WHERE space_id = ? AND session_id = ? ORDER BY id",
            (space, session_id),
        )
        return [_memory(row) for row in rows]

    async def list(
        self, scope: SpaceScope, *, limit: int = 50, before_id: int | None = None
    ) -> list[Memory]:
        """The summaries of `scope` across its sessions, newest first, paged by id."""
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM memories WHERE {where} AND id < ? ORDER BY id DESC LIMIT ?",
            (*params, before_id if before_id is not None else 2**62, limit),
        )
        return [_memory(row) for row in rows]

    async def summarize_messages(
        self,
        space: str,
        session_id: str,
        message_ids: Sequence[int],
        summary: str,
        *,
        written_from: Mapping[int, str] | None = None,
    ) -> Memory | None:
        """Store a summary and archive its messages; None if any was archived meanwhile, or
        (`written_from`: the texts the summary was made of) its text changed (an erase)."""
        now = utcnow()
        placeholders = ",".join("?" for _ in message_ids)
        async with self._db.transaction() as conn:
            await hold_against_erase(conn, space)
            rows = await conn.execute_fetchall(
                f"SELECT id, content FROM messages WHERE id IN ({placeholders}) "
                "AND space_id = ? AND session_id = ? AND archived_at IS NULL",
                (*message_ids, space, session_id),
            )
            if len(rows) != len(message_ids):
                return None
            if written_from is not None and any(
                written_from.get(int(row["id"])) != row["content"] for row in rows
            ):
                return None
            memory_id = await conn.insert(
                "INSERT INTO memories (space_id, session_id, summary, level, created_at) "
                "VALUES (?, ?, ?, 0, ?)",
                (space, session_id, summary, now),
            )
            await conn.execute(
                f"UPDATE messages SET archived_at = ?, memory_id = ? WHERE id IN ({placeholders}) "
                "AND space_id = ?",
                (now, memory_id, *message_ids, space),
            )
        return Memory(memory_id, space, session_id, summary, 0, None, now)

    async def condense(
        self, space: str, session_id: str, memory_ids: Sequence[int], summary: str, level: int
    ) -> Memory | None:
        """Replace live summaries by one condensed summary; the old rows are kept, marked."""
        now = utcnow()
        placeholders = ",".join("?" for _ in memory_ids)
        async with self._db.transaction() as conn:
            await hold_against_erase(conn, space)
            rows = await conn.execute_fetchall(
                f"SELECT COUNT(*) FROM memories WHERE id IN ({placeholders}) "
                "AND space_id = ? AND session_id = ? AND condensed_into IS NULL",
                (*memory_ids, space, session_id),
            )
            if next(iter(rows))[0] != len(memory_ids):
                return None
            memory_id = await conn.insert(
                "INSERT INTO memories (space_id, session_id, summary, level, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (space, session_id, summary, level, now),
            )
            await conn.execute(
                f"UPDATE memories SET condensed_into = ? WHERE id IN ({placeholders}) "
                "AND space_id = ?",
                (memory_id, *memory_ids, space),
            )
        return Memory(memory_id, space, session_id, summary, level, None, now)

    async def delete(self, scope: SpaceScope, memory_id: int) -> bool:
        """Forget one summary; its archived messages stay archived (history is kept)."""
        where, params = in_space(scope)
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                f"DELETE FROM memories WHERE {where} AND id = ?", (*params, memory_id)
            )
            return cursor.rowcount > 0

    async def delete_for_session(self, space: str, session_id: str) -> int:
        """Forget every summary of a session (`/memory forget`)."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM memories WHERE space_id = ? AND session_id = ?", (space, session_id)
            )
            return cursor.rowcount
