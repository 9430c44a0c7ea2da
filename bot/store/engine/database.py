"""The store's one entry point: a database on SQLite or PostgreSQL behind one small facade.

The store writes SQL in the common subset of the two dialects with `?` placeholders (see
`bot.store.engine.dialect`).

- SQLite (the default): one reader connection (`query_only`) and a single serialized writer,
  WAL, foreign keys on, writes in `BEGIN IMMEDIATE`, migrations in `PRAGMA user_version`,
  each an aiosqlite connection in autocommit mode (`SqliteConnection`): one trip to its
  thread per statement, or per batch of statements (`Database.write_batch`). SQLAlchemy is
  not imported at all (~0.3 s of start-up CPU): with two fixed connections there is nothing
  for its pool to do, and its cursor adapter made three or four trips per statement plus a
  greenlet switch for each.
- PostgreSQL, through SQLAlchemy's async engine (asyncpg underneath), which does the driver,
  URL, pooling and error work: a pool of connections kept open (`PG_POOL_SIZE`), each checked
  with a cheap ping
  when taken (one the server ended is replaced, not failed on); reads in autocommit, writes
  in READ COMMITTED transactions whatever the server's default (a writer meeting another on a
  row waits for it, as on SQLite, instead of failing to serialize); the schema and its
  version row come from `bot.store.schema`.

Rows support `row["col"]` and `row[0]`; a failed constraint is `IntegrityError` on both
engines (a `sqlite3.IntegrityError`, so callers written against SQLite keep catching it).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import aiosqlite

from bot.errors import StartupError
from bot.store.engine.backup import backup_to, snapshot_path
from bot.store.engine.connection import Connection, Cursor, SqliteConnection, Statement
from bot.store.engine.dialect import (
    Dialect,
    Params,
    Row,
    asyncpg_url,
    dialect_of,
    redact,
    sqlite_path,
)
from bot.store.engine.migrate import current_version, migrate, migrate_postgresql
from bot.store.engine.pinned import FirstRowReads, PinnedReads, Reads
from bot.store.engine.read_batch import ReadBatcher
from bot.store.schema.migrations import SCHEMA_VERSION
from bot.store.schema.v3_spaces import MigrationContext

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

log = logging.getLogger(__name__)

_T = TypeVar("_T")


_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=5000",
    "PRAGMA temp_store=MEMORY",
    # A deleted or overwritten row's bytes are zeroed, not left in free space: an erase must
    # leave no copy of the text in the file (the WAL is truncated after it: `checkpoint`).
    "PRAGMA secure_delete=ON",
)


_DRAIN_ROUNDS = 50
_QUIET_TURNS = 3


# PostgreSQL connections per process, all kept open once made: the ceiling SQLAlchemy's default
# pool had (5 kept + 10 overflow), but the default closed the overflow after each use, and
# opening a PostgreSQL connection costs a backend start-up — under a burst of turns that
# churn halved throughput. N processes need max_connections of at least N × (this + 1).
PG_POOL_SIZE = 15
# Whatever the server's default: a writer meeting another on a row waits for it (as on
# SQLite) instead of failing to serialize.
_PG_WRITES = "READ COMMITTED"


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


def open_failure(path: Path, error: BaseException) -> StartupError:
    """One sentence naming the database file that could not be opened and what to do."""
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
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
    if isinstance(error, sqlite3.DatabaseError) and "not a database" in reason:
        return StartupError(
            f"{path} is not a SQLite database; set DB_PATH to PlayChat's database file or move "
            "this file away."
        )
    return StartupError(
        f"PlayChat cannot create or write its database {path} ({reason}); make the file and "
        "its folder writable for this user, or set DB_PATH to a writable place."
    )


async def _sqlite_connect(path: Path) -> aiosqlite.Connection:
    """One connection to the file at `path`: autocommit (the store begins its transactions
    itself), the pragmas set, on a daemon thread (one left open cannot hold the process)."""
    pending = aiosqlite.connect(path, isolation_level=None, check_same_thread=False)
    pending._thread.daemon = True
    conn = await pending
    try:
        for pragma in _PRAGMAS:
            await conn.execute(pragma)
    except BaseException:
        await conn.close()
        raise
    return conn


class Database(FirstRowReads):
    """Async access to the PlayChat database; all writes go through `transaction()`."""

    def __init__(
        self,
        engine: AsyncEngine | None,
        dialect: Dialect,
        location: str,
        *,
        path: Path | None = None,
        writer: aiosqlite.Connection | None = None,
        reader: aiosqlite.Connection | None = None,
    ) -> None:
        self.dialect: Dialect = dialect
        self.path = path
        self.location = location
        self._engine = engine  # PostgreSQL's pool; SQLite has its two connections instead
        self._writer = writer
        self._reader = reader
        self._write_link = None if writer is None else SqliteConnection(writer)
        # In memory there is one database per connection: the writer serves reads too.
        self._read_link = None if reader is None else SqliteConnection(reader)
        self._write_lock = asyncio.Lock()
        # One SQLAlchemy connection is not safe for concurrent use: the SQLite reader serves
        # one statement at a time (as aiosqlite's queue did before).
        self._read_lock = asyncio.Lock()
        self._reads = (
            None if self._read_link is None else ReadBatcher(self._read_link, self._read_lock)
        )
        self._started = 0  # statements begun, so close() can tell when work has gone quiet

    @classmethod
    async def connect(cls, url: str, *, local_space: str | None = None) -> Database:
        """Open the database a DATABASE_URL names (sqlite:///FILE or postgresql://…)."""
        if dialect_of(url) == "sqlite":
            return await cls.open(sqlite_path(url), local_space=local_space)
        return await cls._open_postgresql(url, local_space)

    @classmethod
    async def open(cls, path: Path | str, *, local_space: str | None = None) -> Database:
        """Open (creating if needed) and migrate the SQLite database at `path`.

        `local_space` is where a migration puts rows whose space cannot be told otherwise.
        A database with data at an older schema version is copied to
        `<file>.before-v<N>.bak` first. A file that cannot be opened is a StartupError
        naming the path and the fix. A URL is refused: `Path` would turn
        `postgresql://host/db` into a folder `postgresql:` and create a file there.
        """
        if "://" in str(path):
            raise ValueError("Database.open takes a file path, not a URL: use Database.connect")
        db_path = Path(path)
        try:
            return await cls._open_sqlite(db_path, local_space)
        except (sqlite3.Error, OSError) as error:
            raise open_failure(db_path, error) from error

    @classmethod
    async def _open_sqlite(cls, db_path: Path, local_space: str | None) -> Database:
        in_memory = str(db_path) == ":memory:"
        if not in_memory:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            await asyncio.to_thread(_probe, str(db_path))
        writer = await _sqlite_connect(db_path)
        try:
            if not in_memory:
                await _snapshot_before_upgrade(writer, db_path)
            await migrate(writer, _context(local_space))
            reader = writer if in_memory else await _sqlite_connect(db_path)
        except BaseException:
            await writer.close()
            raise
        try:
            if reader is not writer:
                await reader.execute("PRAGMA query_only=ON")
        except BaseException:
            await reader.close()
            await writer.close()
            raise
        log.debug("database opened at %s", db_path)
        return cls(None, "sqlite", str(db_path), path=db_path, writer=writer, reader=reader)

    @classmethod
    async def _open_postgresql(cls, url: str, local_space: str | None) -> Database:
        from sqlalchemy import exc
        from sqlalchemy.ext.asyncio import create_async_engine

        engine = create_async_engine(
            asyncpg_url(url),
            pool_pre_ping=True,
            # Pooled connections rest in autocommit: the pre-ping is then one bare round trip
            # (in a transaction it was BEGIN, ping, ROLLBACK on every checkout) and a read
            # needs no transaction; `transaction()` and the migration ask for one.
            isolation_level="AUTOCOMMIT",
            pool_size=PG_POOL_SIZE,
            max_overflow=0,
        )
        location = redact(url)
        try:
            async with engine.connect() as conn:
                # One transaction: its advisory lock holds other processes off until done.
                await conn.execution_options(isolation_level=_PG_WRITES)
                await migrate_postgresql(Connection(conn, "postgresql"), _context(local_space))
                await conn.commit()
        except (OSError, exc.DBAPIError) as error:
            await engine.dispose()
            raise StartupError(
                f"PlayChat cannot use the PostgreSQL database {location} ({error}); check "
                "DATABASE_URL, that the server runs and that the role may create tables."
            ) from error
        except BaseException:
            await engine.dispose()
            raise
        log.debug("database opened at %s", location)
        return cls(engine, "postgresql", location)

    async def close(self) -> None:
        """Close the connections once the work under way has gone quiet (see `_drain`)."""
        await self._drain()
        async with self._write_lock, self._read_lock:
            if self._reader is not None:
                await self._reader.close()
            if self._writer is not None:
                await self._writer.close()
            if self._engine is not None:
                await self._engine.dispose()

    async def _drain(self) -> None:
        """Wait until no statement has begun for a few loop turns (bounded): a task in the
        middle of a chain of statements (read, then write) finishes it instead of meeting a
        closed database halfway, as it did when each connection had its own thread queue."""
        for _ in range(_DRAIN_ROUNDS):
            seen = self._started
            async with self._write_lock, self._read_lock:
                pass
            for _ in range(_QUIET_TURNS):
                await asyncio.sleep(0)
            if seen == self._started and not self._write_lock.locked():
                return

    def _pool(self) -> AsyncEngine:
        assert self._engine is not None, "only PostgreSQL has a pool"
        return self._engine

    @asynccontextmanager
    async def _read(self) -> AsyncIterator[Connection]:
        self._started += 1
        if self._read_link is not None:
            async with self._read_lock:
                yield self._read_link
            return
        async with self._pool().connect() as conn:
            yield Connection(conn, self.dialect)

    async def fetchall(
        self, sql: str, params: Params = (), *, indexes_only: bool = False
    ) -> list[Row]:
        """Run a read query and return all rows. `indexes_only` (PostgreSQL; no effect on
        SQLite): planned without sequential scans, for a read shaped for an index whose
        per-row filter the planner prices too low (recall's tsvector and ILIKE matches)."""
        if indexes_only and self._write_link is None:
            self._started += 1
            # Reads are autocommit: SET LOCAL needs the read's own transaction (it ends there,
            # so the setting never reaches the pooled connection's next user).
            async with self._pooled_transaction() as pooled:
                await pooled.execute("SET LOCAL enable_seqscan = off")
                return await pooled.execute_fetchall(sql, params)
        if self._reads is not None:
            self._started += 1
            return await self._reads.fetchall(sql, params)
        async with self._read() as conn:
            return await conn.execute_fetchall(sql, params)

    @asynccontextmanager
    async def pinned_reads(self) -> AsyncIterator[Reads]:
        """Several reads as one (PostgreSQL: on one pooled connection, in one transaction
        planned without sequential scans, as `indexes_only` reads are — for a chain of
        index-shaped reads whose round trips cost more than the reads: recall's ≈ 40 took
        half its time on a loaded server). SQLite: the database itself."""
        if self._engine is None:
            yield self
            return
        self._started += 1
        async with self._pooled_transaction() as pooled:
            await pooled.execute("SET LOCAL enable_seqscan = off")
            yield PinnedReads(pooled)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A write transaction (SQLite: BEGIN IMMEDIATE on the one writer); commits on
        success, rolls back on error."""
        self._started += 1
        if self._write_link is None:
            async with self._pooled_transaction() as conn:
                yield conn
            return
        async with self._write_lock:
            writer = self._write_link
            writer.begin_with_next_statement()
            try:
                yield writer
            except BaseException:
                await writer.end(commit=False)
                raise
            await writer.end(commit=True)

    @asynccontextmanager
    async def _pooled_transaction(self) -> AsyncIterator[Connection]:
        """A write transaction on a pooled PostgreSQL connection."""
        async with self._pool().connect() as pooled:
            await pooled.execution_options(isolation_level=_PG_WRITES)
            async with pooled.begin():
                yield Connection(pooled, self.dialect)

    @asynccontextmanager
    async def _one_trip(self) -> AsyncIterator[Connection]:
        """A transaction for exactly one statement or batch (on SQLite, one trip with it)."""
        self._started += 1
        if self._write_link is None:
            async with self._pooled_transaction() as conn:
                yield conn
            return
        async with self._write_lock:
            self._write_link.alone_with_next_statement()
            try:
                yield self._write_link
            finally:
                self._write_link.end_alone()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one write statement in its own transaction; returns SQLite's lastrowid (0 on
        PostgreSQL: use `insert` for a new row's id)."""
        async with self._one_trip() as conn:
            return (await conn.execute(sql, params)).lastrowid or 0

    async def insert(self, sql: str, params: Params = ()) -> int:
        """Run one INSERT in its own transaction; returns the new row's id."""
        async with self._one_trip() as conn:
            return await conn.insert(sql, params)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one write statement for many parameter sets in a single transaction."""
        async with self._one_trip() as conn:
            await conn.executemany(sql, rows)

    async def write_batch(self, statements: Sequence[Statement]) -> list[Cursor]:
        """Run write statements that need none of one another's results in one transaction
        (SQLite: one trip with its BEGIN and COMMIT, rolled back on it if one fails); their
        cursors, in order."""
        async with self._one_trip() as conn:
            return await conn.run_batch(statements)

    async def scrub(self, tables: Sequence[str], fts_tables: Sequence[str]) -> None:
        """After texts in `tables` were overwritten or deleted (an erase), leave no copy in
        the database's files.

        SQLite (`secure_delete` zeroed the rows' old bytes): each FTS5 index in `fts_tables`
        is merged into one segment, which drops the deleted rows' terms (SQLite 3.40 has no
        FTS5 secure-delete), each in its own transaction; then the WAL is copied into the
        file and truncated, taking the old page images with it (a busy reader makes that
        partial: logged). PostgreSQL: VACUUM of `tables` prunes the dead row versions (their
        pages reach the disk at the server's next checkpoint); the server's WAL keeps the old
        text until its segments are recycled (see README).
        """
        if self._write_link is None:
            await self._vacuum(tables)
            return
        for table in fts_tables:
            await self.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        async with self._write_lock:
            self._started += 1
            rows = await self._write_link.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")
        busy = next(iter(rows))[0] if rows else 0
        if busy:
            log.warning("the WAL checkpoint after an erase was blocked by a reader")

    async def _vacuum(self, tables: Sequence[str]) -> None:
        """PostgreSQL: VACUUM the tables (outside a transaction: pooled connections rest in
        autocommit)."""
        if not tables:
            return
        self._started += 1
        async with self._pool().connect() as conn:
            await conn.exec_driver_sql(f"VACUUM {', '.join(tables)}")

    async def size_bytes(self) -> int:
        """How much room the database takes (SQLite: pages × page size)."""
        if self.dialect == "postgresql":
            return int(await self.scalar("SELECT pg_database_size(current_database())") or 0)
        page_count = await self.scalar("PRAGMA page_count")
        page_size = await self.scalar("PRAGMA page_size")
        return int(page_count or 0) * int(page_size or 0)


def _context(local_space: str | None) -> MigrationContext:
    return MigrationContext() if local_space is None else MigrationContext(local_space)
