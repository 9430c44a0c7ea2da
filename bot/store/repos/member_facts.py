"""Member memory: facts kept about a member of a space, and each member's on/off switch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Params, Row
from bot.store.repos.space_records import ensure_space_row

FactSource = Literal["tool", "request"]


@dataclass(frozen=True)
class MemberFact:
    """One fact about a member; `shared` facts are shown in other members' turns too."""

    id: int
    space_id: str
    member_id: str
    member_name: str
    fact: str
    shared: bool
    source: str
    session_id: str | None
    created_at: str


@dataclass(frozen=True)
class MemberSummary:
    """How much is kept about one member of a space (the operator's overview)."""

    space_id: str
    member_id: str
    member_name: str
    facts: int
    enabled: bool


_COLUMNS = "id, space_id, member_id, member_name, fact, shared, source, session_id, created_at"


def _fact(row: Row) -> MemberFact:
    return MemberFact(
        id=int(row["id"]),
        space_id=row["space_id"],
        member_id=row["member_id"],
        member_name=row["member_name"],
        fact=row["fact"],
        shared=bool(row["shared"]),
        source=row["source"],
        session_id=row["session_id"],
        created_at=row["created_at"],
    )


class MemberFactRepository:
    """Reads and writes the member facts and switches of a space."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def _count(self, sql: str, params: Params) -> int:
        """Run one write; how many rows it touched."""
        async with self._db.transaction() as conn:
            return (await conn.execute(sql, params)).rowcount

    async def add(
        self,
        space: str,
        member_id: str,
        fact: str,
        *,
        source: FactSource,
        member_name: str = "",
        session_id: str | None = None,
        shared: bool = False,
        cap: int,
        message_id: int | None = None,
    ) -> MemberFact | None:
        """Insert a fact unless the member already has `cap` of them (then None), atomically;
        an unknown session or message is stored as NULL."""
        now = utcnow()
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space)
            rows = await conn.execute_fetchall(
                "SELECT COUNT(*) FROM member_facts WHERE space_id = ? AND member_id = ?",
                (space, member_id),
            )
            if int(next(iter(rows))[0]) >= cap:
                return None
            fact_id = await conn.insert(
                "INSERT INTO member_facts (space_id, member_id, member_name, fact, shared, "
                "source, session_id, created_at, message_id) VALUES (?, ?, ?, ?, ?, ?, "
                "(SELECT id FROM sessions WHERE space_id = ? AND id = ?), ?, "
                "(SELECT id FROM messages WHERE space_id = ? AND id = ?))",
                (
                    space,
                    member_id,
                    member_name,
                    fact,
                    int(shared),
                    source,
                    space,
                    session_id,
                    now,
                    space,
                    message_id,
                ),
            )
            stored = await conn.execute_fetchall(
                f"SELECT {_COLUMNS} FROM member_facts WHERE space_id = ? AND id = ?",
                (space, fact_id),
            )
        return _fact(next(iter(stored)))

    async def of_member(self, space: str, member_id: str) -> list[MemberFact]:
        """The member's facts, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM member_facts WHERE space_id = ? AND member_id = ? ORDER BY id",
            (space, member_id),
        )
        return [_fact(row) for row in rows]

    async def shared_by_others(self, space: str, member_id: str, limit: int) -> list[MemberFact]:
        """The newest `limit` shared facts of the other members, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM member_facts WHERE space_id = ? AND shared = 1 "
            "AND member_id != ? ORDER BY id DESC LIMIT ?",
            (space, member_id, limit),
        )
        return [_fact(row) for row in reversed(rows)]

    async def set_shared(self, space: str, member_id: str, fact_id: int, shared: bool) -> bool:
        """Mark one of the member's facts shared (or not); False when it is not theirs."""
        changed = await self._count(
            "UPDATE member_facts SET shared = ? WHERE space_id = ? AND member_id = ? AND id = ?",
            (int(shared), space, member_id, fact_id),
        )
        return changed > 0

    async def enabled(self, space: str, member_id: str) -> bool:
        """Whether the member's memory is on in the space (on unless switched off)."""
        value = await self._db.scalar(
            "SELECT enabled FROM member_memory WHERE space_id = ? AND member_id = ?",
            (space, member_id),
        )
        return value is None or bool(value)

    async def set_enabled(self, space: str, member_id: str, enabled: bool) -> None:
        """Switch the member's memory on or off in the space."""
        async with self._db.transaction() as conn:
            await ensure_space_row(conn, space)
            await conn.execute(
                "INSERT INTO member_memory (space_id, member_id, enabled, switched_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(space_id, member_id) DO UPDATE SET "
                "enabled = excluded.enabled, switched_at = excluded.switched_at",
                (space, member_id, int(enabled), utcnow()),
            )

    async def members(self, space: str) -> list[MemberSummary]:
        """Every member of the space with facts or a switch: name, fact count, on/off."""
        rows = await self._db.fetchall(
            "SELECT k.member_id, "
            "(SELECT f.member_name FROM member_facts f WHERE f.space_id = k.space_id "
            "AND f.member_id = k.member_id ORDER BY f.id DESC LIMIT 1) AS member_name, "
            "(SELECT COUNT(*) FROM member_facts f WHERE f.space_id = k.space_id "
            "AND f.member_id = k.member_id) AS facts, "
            "(SELECT s.enabled FROM member_memory s WHERE s.space_id = k.space_id "
            "AND s.member_id = k.member_id) AS enabled "
            "FROM (SELECT space_id, member_id FROM member_facts WHERE space_id = ? "
            "UNION SELECT space_id, member_id FROM member_memory WHERE space_id = ?) k "
            "ORDER BY k.member_id",
            (space, space),
        )
        return [
            MemberSummary(
                space,
                row["member_id"],
                row["member_name"] or "",
                int(row["facts"]),
                row["enabled"] is None or bool(row["enabled"]),
            )
            for row in rows
        ]
