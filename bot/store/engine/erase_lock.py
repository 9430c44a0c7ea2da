"""The lock that keeps writes of a member's text from racing their erase (PostgreSQL).

An erase holds its space's lock exclusively; a write that must not bring erased text back (a
summary, an answer, tags, pool words) holds it shared and checks, inside its transaction, that
what it writes from was not erased. On PostgreSQL several processes write at READ COMMITTED,
so without the lock such a check could run before an erase commits and its write after. SQLite
has one writer: its transactions are serial already, and these are no-ops.
"""

from __future__ import annotations

from typing import Final

from bot.store.engine.connection import Connection, Statement
from bot.store.engine.dialect import Dialect

# The class half of the two-part PostgreSQL advisory lock key (the space's hash is the other).
_ERASE_LOCK: Final = 28
_EXCLUSIVE: Final = "SELECT pg_advisory_xact_lock(?, hashtext(?))"
_SHARED: Final = "SELECT pg_advisory_xact_lock_shared(?, hashtext(?))"


async def hold_for_erase(conn: Connection, space: str) -> None:
    """An erase of `space` runs alone: wait for the writes holding the lock shared."""
    if conn.dialect == "postgresql":
        await conn.execute(_EXCLUSIVE, (_ERASE_LOCK, space))


async def hold_against_erase(conn: Connection, space: str) -> None:
    """No erase of `space` runs until this transaction ends (others like it may)."""
    if conn.dialect == "postgresql":
        await conn.execute(_SHARED, (_ERASE_LOCK, space))


def against_erase(dialect: Dialect, space: str) -> list[Statement]:
    """`hold_against_erase` as the first statement of a batch ([] on SQLite)."""
    if dialect != "postgresql":
        return []
    return [Statement(_SHARED, (_ERASE_LOCK, space))]
