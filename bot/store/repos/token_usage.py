"""Tokens each space's turns use per day, per member and in all, reserved before each call.

A row per (space, day, member); `member_id` '' is the whole space. A call reserves its
estimate first with one conditional upsert per row, which succeeds only while the row's used
plus reserved tokens are below the limit: on SQLite the writes are serial (BEGIN IMMEDIATE),
on PostgreSQL the upsert locks the row and checks the condition on its latest version, so two
processes cannot both pass on the same stale total. The space row is taken before the member
row in every transaction, so two reservations never wait on each other in a cycle. A call that
ends settles its reservation with what it really cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.store.engine.connection import Connection, utcnow
from bot.store.engine.database import Database
from bot.store.spaces import SpaceScope, in_space

# The member id of a space's own row: every member's turns together.
WHOLE_SPACE = ""

Refused = Literal["member", "server"]


@dataclass(frozen=True)
class Reservation:
    """Tokens held for one call under way, on one day of a space (and of its member)."""

    space_id: str
    day: str
    member_id: str | None
    tokens: int


@dataclass(frozen=True)
class DayUsage:
    """What a space (member_id None) or one of its members used on one day."""

    space_id: str
    day: str
    member_id: str | None
    used: int
    reserved: int
    calls: int


class _Over(Exception):
    """A row's limit is reached: the reservation's transaction rolls back."""

    def __init__(self, which: Refused) -> None:
        super().__init__(which)
        self.which = which


def _upsert(limited: bool) -> str:
    """The reserving upsert; with a limit, it updates only a row still under it."""
    condition = " WHERE token_usage.used + token_usage.reserved < ?" if limited else ""
    return (
        "INSERT INTO token_usage (space_id, day, member_id, used, reserved, calls, updated_at) "
        "VALUES (?, ?, ?, 0, ?, 0, ?) ON CONFLICT (space_id, day, member_id) DO UPDATE SET "
        "reserved = token_usage.reserved + excluded.reserved, updated_at = excluded.updated_at"
        f"{condition} RETURNING reserved"
    )


async def _hold(conn: Connection, hold: Reservation, member: str, limit: int) -> bool:
    """Reserve the tokens on one row; False when its limit is reached (nothing written)."""
    params: tuple[object, ...] = (hold.space_id, hold.day, member, hold.tokens, utcnow())
    rows = await conn.execute_fetchall(_upsert(limit > 0), (*params, limit) if limit else params)
    return bool(rows)


class TokenUsageRepository:
    """Reserves, settles and reports the tokens of turns per space, member and day."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def timezone(self, space: str) -> str | None:
        """The space's own time zone (an IANA name), None when it has none."""
        rows = await self._db.fetchall("SELECT timezone FROM spaces WHERE id = ?", (space,))
        return None if not rows or rows[0]["timezone"] is None else str(rows[0]["timezone"])

    async def reserve(
        self, hold: Reservation, *, member_limit: int, server_limit: int
    ) -> Refused | None:
        """Hold `hold.tokens` on the space's and the member's rows; which limit refused it
        (nothing held then), or None. A limit of 0 is none: usage is still counted."""
        try:
            async with self._db.transaction() as conn:
                if not await _hold(conn, hold, WHOLE_SPACE, server_limit):
                    raise _Over("server")
                if hold.member_id is not None and not await _hold(
                    conn, hold, hold.member_id, member_limit
                ):
                    raise _Over("member")
        except _Over as over:
            return over.which
        return None

    async def settle(self, hold: Reservation, used: int) -> None:
        """End a reservation: its tokens leave `reserved` and `used` tokens are counted."""
        members = [WHOLE_SPACE] if hold.member_id is None else [WHOLE_SPACE, hold.member_id]
        marks = ", ".join("?" for _ in members)
        await self._db.execute(
            "UPDATE token_usage SET used = used + ?, reserved = reserved - ?, "
            "calls = calls + ?, updated_at = ? "
            f"WHERE space_id = ? AND day = ? AND member_id IN ({marks})",
            (used, hold.tokens, 1 if used else 0, utcnow(), hold.space_id, hold.day, *members),
        )

    async def on_day(self, scope: SpaceScope, day: str) -> list[DayUsage]:
        """Every row of `day` in the scope (a space, or every space), biggest users first."""
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            "SELECT space_id, day, member_id, used, reserved, calls FROM token_usage "
            f"WHERE {where} AND day = ? ORDER BY space_id, used DESC, member_id",
            (*params, day),
        )
        return [
            DayUsage(
                str(row["space_id"]),
                str(row["day"]),
                None if row["member_id"] == WHOLE_SPACE else str(row["member_id"]),
                int(row["used"]),
                int(row["reserved"]),
                int(row["calls"]),
            )
            for row in rows
        ]
