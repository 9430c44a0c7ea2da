"""One SQLite database: a reader connection and a single serialized writer (WAL)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from bot.store.migration_spaces import MigrationContext
from bot.store.migrations import migrate

log = logging.getLogger(__name__)

Params = Sequence[Any] | dict[str, Any]

_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=5000",
    "PRAGMA temp_store=MEMORY",
)


def utcnow() -> str:
    """Current UTC time as the ISO-8601 text stored in every timestamp column."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


async def _connect(path: str) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    for pragma in _PRAGMAS:
        await conn.execute(pragma)
    return conn


class Database:
    """Async access to the PlayChat database; all writes go through `transaction()`."""

    def __init__(self, path: Path, writer: aiosqlite.Connection, reader: aiosqlite.Connection):
        self.path = path
        self._writer = writer
        self._reader = reader
        self._write_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path | str, *, local_space: str | None = None) -> Database:
        """Open (creating if needed) and migrate the database at `path`.

        `local_space` is where a migration puts rows whose space cannot be told otherwise.
        """
        db_path = Path(path)
        if str(db_path) != ":memory:":
            db_path.parent.mkdir(parents=True, exist_ok=True)
        writer = await _connect(str(db_path))
        try:
            context = MigrationContext() if local_space is None else MigrationContext(local_space)
            await migrate(writer, context)
            reader = await _connect(str(db_path))
        except BaseException:
            await writer.close()
            raise
        await reader.execute("PRAGMA query_only=ON")
        log.debug("database opened at %s", db_path)
        return cls(db_path, writer, reader)

    async def close(self) -> None:
        """Close both connections."""
        await self._reader.close()
        await self._writer.close()

    async def fetchall(self, sql: str, params: Params = ()) -> list[sqlite3.Row]:
        """Run a read query and return all rows."""
        return list(await self._reader.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> sqlite3.Row | None:
        """Run a read query and return the first row, if any."""
        rows = await self._reader.execute_fetchall(sql, params)
        for row in rows:
            return row
        return None

    async def scalar(self, sql: str, params: Params = ()) -> Any:
        """First column of the first row, or None."""
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction (BEGIN IMMEDIATE); commits on success, rolls back on error."""
        async with self._write_lock:
            await self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield self._writer
            except BaseException:
                await self._writer.execute("ROLLBACK")
                raise
            await self._writer.execute("COMMIT")

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one write statement in its own transaction; returns lastrowid."""
        async with self.transaction() as conn:
            cursor = await conn.execute(sql, params)
            return cursor.lastrowid or 0

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one write statement for many parameter sets in a single transaction."""
        async with self.transaction() as conn:
            await conn.executemany(sql, rows)
