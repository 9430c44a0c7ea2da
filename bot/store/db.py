"""One SQLite database: a reader connection and a single serialized writer (WAL)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager, closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from bot.errors import StartupError
from bot.store.backup import backup_to, snapshot_path
from bot.store.migration_spaces import MigrationContext
from bot.store.migrations import SCHEMA_VERSION, current_version, migrate

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
    try:
        for pragma in _PRAGMAS:
            await conn.execute(pragma)
    except BaseException:
        await conn.close()
        raise
    return conn


def _probe(path: str) -> None:
    """Open the file once with plain sqlite3, so a bad path fails here and not inside
    aiosqlite's worker thread (which, on a failed connect, outlives a closing event loop)."""
    with closing(sqlite3.connect(path)) as conn:
        _switch_to_wal(conn)
        conn.execute("PRAGMA user_version").fetchone()


def _switch_to_wal(conn: sqlite3.Connection, within: float = 5.0) -> None:
    """WAL mode, waiting for another process that switches the same new file at this moment:
    SQLite reports that as "locked" at once (no busy timeout), so it is tried again briefly."""
    deadline = time.monotonic() + within
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(0.05)  # a worker thread's pause; the other process needs milliseconds


async def _snapshot_before_upgrade(conn: aiosqlite.Connection, db_path: Path) -> None:
    version = await current_version(conn)
    if 0 < version < SCHEMA_VERSION:
        target = await backup_to(db_path, snapshot_path(db_path, SCHEMA_VERSION), overwrite=True)
        log.info(
            "database at schema version %d copied to %s before upgrading it to version %d",
            version,
            target,
            SCHEMA_VERSION,
        )


def open_failure(path: Path, exc: BaseException) -> StartupError:
    """One sentence naming the database file that could not be opened and what to do."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    if path.is_dir():
        return StartupError(
            f"DB_PATH={path} is a folder, not a database file; set DB_PATH to a file such as "
            f"{path / 'playchat.db'}."
        )
    if "locked" in reason:
        return StartupError(
            f"The database {path} is locked by another program (another PlayChat on the same "
            "DB_PATH?); stop that program or set DB_PATH to another file."
        )
    if isinstance(exc, sqlite3.DatabaseError) and "not a database" in reason:
        return StartupError(
            f"{path} is not a SQLite database; set DB_PATH to PlayChat's database file or move "
            "this file away."
        )
    return StartupError(
        f"PlayChat cannot create or write its database {path} ({reason}); make the file and "
        "its folder writable for this user, or set DB_PATH to a writable place."
    )


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
        A database with data at an older schema version is copied to
        `<file>.before-v<N>.bak` first. A file that cannot be opened is a StartupError
        naming the path and the fix.
        """
        db_path = Path(path)
        try:
            return await cls._open(db_path, local_space)
        except (sqlite3.Error, OSError) as exc:
            raise open_failure(db_path, exc) from exc

    @classmethod
    async def _open(cls, db_path: Path, local_space: str | None) -> Database:
        in_memory = str(db_path) == ":memory:"
        if not in_memory:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(_probe, str(db_path))
        writer = await _connect(str(db_path))
        try:
            if not in_memory:
                await _snapshot_before_upgrade(writer, db_path)
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
        """Close both connections once a running write transaction has ended."""
        async with self._write_lock:
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
