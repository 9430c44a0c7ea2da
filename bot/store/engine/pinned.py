"""A chain of reads as one: the interface recall's reads need, and PostgreSQL's pinned form
(one pooled connection, one transaction; `Database.pinned_reads`)."""

from __future__ import annotations

from typing import Any, Protocol

from bot.store.engine.connection import Connection
from bot.store.engine.dialect import Dialect, Params, Row


class Reads(Protocol):
    """What a chain of reads calls: the database itself, or its pinned reads."""

    @property
    def dialect(self) -> Dialect:
        """The engine (`sqlite` or `postgresql`)."""
        ...

    async def fetchall(
        self, sql: str, params: Params = (), *, indexes_only: bool = False
    ) -> list[Row]:
        """Run a read query and return all rows."""
        ...

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run a read query and return the first row, if any."""
        ...

    async def scalar(self, sql: str, params: Params = ()) -> Any:
        """First column of the first row, or None."""
        ...


class FirstRowReads:
    """`fetchone` and `scalar` from a class's own `fetchall`."""

    async def fetchall(
        self, sql: str, params: Params = (), *, indexes_only: bool = False
    ) -> list[Row]:
        """Run a read query and return all rows."""
        raise NotImplementedError

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """Run a read query and return the first row, if any."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def scalar(self, sql: str, params: Params = ()) -> Any:
        """First column of the first row, or None."""
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]


class PinnedReads(FirstRowReads):
    """PostgreSQL reads on one connection in one transaction, sequential scans off."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    @property
    def dialect(self) -> Dialect:
        """Always PostgreSQL (SQLite reads are not pinned)."""
        return "postgresql"

    async def fetchall(
        self, sql: str, params: Params = (), *, indexes_only: bool = False
    ) -> list[Row]:
        """Run a read query and return all rows (every read here is `indexes_only`)."""
        del indexes_only
        return await self._conn.execute_fetchall(sql, params)
