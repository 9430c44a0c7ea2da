"""Connections of the store's engine: one statement interface over SQLite and PostgreSQL.

`Connection` runs SQL written in the common subset of the two dialects with `?` placeholders
(see `bot.store.engine.dialect`) on PostgreSQL through SQLAlchemy; `SqliteConnection` runs it
on an aiosqlite connection in autocommit mode, one trip to its thread per statement or per
batch of statements. Rows support `row["col"]` and `row[0]`; a failed constraint is
`IntegrityError` on both engines (a `sqlite3.IntegrityError`, so callers written against
SQLite keep catching it).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import aiosqlite

from bot.store.engine.dialect import Dialect, Params, Row, make_rows, postgres_statement

if TYPE_CHECKING:
    from sqlalchemy.engine import CursorResult
    from sqlalchemy.ext.asyncio import AsyncConnection

_T = TypeVar("_T")


class IntegrityError(sqlite3.IntegrityError):
    """A constraint failed (unique, foreign key, check) on either engine."""


def utcnow() -> str:
    """Current UTC time as the ISO-8601 text stored in every timestamp column."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@contextmanager
def _driver_errors() -> Iterator[None]:
    """SQLAlchemy's wrapped errors (PostgreSQL) as the store's: a failed constraint is
    IntegrityError, as on SQLite; other errors stay SQLAlchemy's."""
    from sqlalchemy import exc  # loaded with the engine: PostgreSQL only

    try:
        yield
    except exc.IntegrityError as error:
        raise IntegrityError(str(error.orig)) from error


class Cursor:
    """What one statement left: its rows (if any), `rowcount` and, on SQLite, `lastrowid`."""

    def __init__(self, rows: list[Row], rowcount: int, lastrowid: int | None) -> None:
        self.rowcount = rowcount
        self.lastrowid = lastrowid
        self._rows = rows

    async def fetchone(self) -> Row | None:
        """The first row, or None."""
        return self._rows[0] if self._rows else None

    async def fetchall(self) -> list[Row]:
        """All rows."""
        return list(self._rows)


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a batch (`Database.write_batch`): `sql` with `params`, or, given
    `many`, once per parameter set (as `executemany`; its cursor has no rows, rowcount -1)."""

    sql: str
    params: Params = ()
    many: Sequence[Params] | None = None


def _cursor(result: CursorResult[Any], dialect: Dialect) -> Cursor:
    rows = make_rows(list(result.keys()), result.fetchall()) if result.returns_rows else []
    lastrowid = result.lastrowid if dialect == "sqlite" else None
    return Cursor(rows, result.rowcount, lastrowid)


class Connection:
    """One connection inside a transaction (or a read): `execute`, `execute_fetchall`,
    `executemany` and `insert` with the store's `?` SQL (PostgreSQL, through SQLAlchemy;
    `SqliteConnection` on SQLite)."""

    def __init__(self, conn: AsyncConnection, dialect: Dialect) -> None:
        self._conn = conn
        self.dialect: Dialect = dialect

    async def execute(self, sql: str, params: Params = ()) -> Cursor:
        """Run one statement."""
        with _driver_errors():
            text, values = postgres_statement(sql, params)
            result = await self._conn.exec_driver_sql(text, values)
            return _cursor(result, self.dialect)

    async def execute_fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement and return its rows."""
        return (await self.execute(sql, params))._rows

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement for many parameter sets."""
        batch = list(rows)
        if not batch:
            return
        with _driver_errors():
            text = postgres_statement(sql, None)[0]
            values = [postgres_statement(sql, row)[1] for row in batch]
            await self._conn.exec_driver_sql(text, values)

    async def insert(self, sql: str, params: Params = ()) -> int:
        """Run an INSERT and return the new row's `id` (via RETURNING, on both engines)."""
        row = await (await self.execute(f"{sql} RETURNING id", params)).fetchone()
        return 0 if row is None else int(row[0])

    async def run_batch(self, statements: Sequence[Statement]) -> list[Cursor]:
        """Run statements that need none of one another's results, in order; their cursors."""
        cursors = []
        for statement in statements:
            if statement.many is None:
                cursors.append(await self.execute(statement.sql, statement.params))
            else:
                await self.executemany(statement.sql, statement.many)
                cursors.append(Cursor([], -1, None))
        return cursors


def _sqlite_params(params: Params) -> tuple[Any, ...] | dict[str, Any]:
    return dict(params) if isinstance(params, Mapping) else tuple(params)


# Statements known to answer with rows run as one `execute_fetchall` trip (the store binds
# every value as a parameter, so the keyword is never inside a literal).
_QUERY = re.compile(r"\s*(?:SELECT|VALUES)\b", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)


class RowMaker:
    """sqlite3 row factory building the store's `Row` on the connection's own thread; rows of
    one statement share one column index."""

    __slots__ = ("_description", "_index")

    def __init__(self) -> None:
        self._description: Any = None
        self._index: dict[str, int] = {}

    def __call__(self, cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> Row:
        """The row `values` of `cursor`'s current statement."""
        description = cursor.description
        if description is not self._description:
            index: dict[str, int] = {}
            for position, column in enumerate(description):
                index.setdefault(column[0], position)  # a repeated name answers with its first
            self._description, self._index = description, index
        return Row(self._index, values)


@contextmanager
def _sqlite_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.IntegrityError as error:
        if isinstance(error, IntegrityError):
            raise
        raise IntegrityError(str(error)) from error


class SqliteConnection(Connection):
    """A `Connection` on an aiosqlite connection: each statement is one trip to aiosqlite's
    thread, and rows are built there (see `RowMaker`).

    Why it exists beside SQLAlchemy (which PostgreSQL uses): in the tricks ledger
    (bench/README.md; bench/paired.py over bench/discord_turn.py) SQLite through SQLAlchemy
    cost +5.15 ms (+32 %) of bot CPU per warm reply, +62 % cold first text and +0.34 s to ready.

    A write transaction's `BEGIN IMMEDIATE` goes on the trip of its first statement, and a
    write that is a transaction of its own (`alone_with_next_statement`: one statement, or a
    batch of them, `run_batch`) is one trip with its BEGIN and COMMIT: under load each trip
    waits its turn on the event loop, and the single writer is held for every trip of a
    transaction.
    """

    def __init__(self, raw: aiosqlite.Connection) -> None:
        # Not Connection.__init__: its state is a SQLAlchemy connection, and there is none here.
        self.dialect = "sqlite"
        self._raw = raw
        raw.row_factory = RowMaker()  # type: ignore[assignment]
        self._begin_first = False
        self._alone_next = False
        self._begun = False  # set on aiosqlite's thread once BEGIN IMMEDIATE has run

    def begin_with_next_statement(self) -> None:
        """Open a write transaction with the next statement (on its trip)."""
        self._begin_first, self._begun = True, False

    def alone_with_next_statement(self) -> None:
        """Run the next statement (or batch) as a transaction of its own: BEGIN, it and COMMIT
        on one trip (rolled back on that trip if it fails)."""
        self._alone_next = True

    def end_alone(self) -> None:
        """Forget `alone_with_next_statement` if no statement used it (an empty batch)."""
        self._alone_next = False

    async def end(self, *, commit: bool) -> None:
        """Commit (or roll back) the transaction `begin_with_next_statement` opened; no trip
        if no statement ran."""
        self._begin_first = False
        if not self._begun:
            return
        self._begun = False
        with _sqlite_errors():
            await self._trip(_commit if commit else _rollback)

    async def _trip(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        alone = self._alone_next
        begin = self._begin_first or alone
        self._begin_first = self._alone_next = False
        conn = self._raw._conn  # the sqlite3 connection; used only on aiosqlite's thread

        def run() -> _T:
            if not begin:
                return work(conn)
            conn.execute("BEGIN IMMEDIATE")
            if not alone:
                self._begun = True
                return work(conn)
            try:
                done = work(conn)
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT")
            return done

        # aiosqlite's own way to run a call on its thread (what its public methods use).
        return cast(_T, await self._raw._execute(run))  # type: ignore[no-untyped-call]

    async def execute(self, sql: str, params: Params = ()) -> Cursor:
        """Run one statement (one thread trip)."""
        with _sqlite_errors():
            return await self._trip(_statement(sql, _sqlite_params(params)))

    async def execute_fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement and return its rows (one thread trip)."""
        return (await self.execute(sql, params))._rows

    async def run_reads(self, reads: Sequence[tuple[str, Params]]) -> list[list[Row] | Exception]:
        """Run read statements in order on one trip: each one's rows, or the error it raised
        (one failing read does not fail the others)."""
        works = [_statement(sql, _sqlite_params(params)) for sql, params in reads]

        def run(conn: sqlite3.Connection) -> list[list[Row] | Exception]:
            outcomes: list[list[Row] | Exception] = []
            for work in works:
                try:
                    with _sqlite_errors():
                        outcomes.append(work(conn)._rows)
                except Exception as error:
                    outcomes.append(error)
            return outcomes

        return await self._trip(run)

    async def executemany(self, sql: str, rows: Iterable[Params]) -> None:
        """Run one statement for many parameter sets (one thread trip)."""
        batch = [_sqlite_params(row) for row in rows]
        if batch:
            with _sqlite_errors():
                await self._trip(lambda conn: conn.executemany(sql, batch))

    async def run_batch(self, statements: Sequence[Statement]) -> list[Cursor]:
        """Run statements that need none of one another's results, in order, on one trip."""
        if not statements:
            return []
        works = [_batch_work(statement) for statement in statements]
        with _sqlite_errors():
            return await self._trip(lambda conn: [work(conn) for work in works])


def _batch_work(statement: Statement) -> Callable[[sqlite3.Connection], Cursor]:
    """The work of one statement of a batch on aiosqlite's thread."""
    if statement.many is None:
        return _statement(statement.sql, _sqlite_params(statement.params))
    sql, rows = statement.sql, [_sqlite_params(row) for row in statement.many]

    def run(conn: sqlite3.Connection) -> Cursor:
        if rows:
            conn.executemany(sql, rows)
        return Cursor([], -1, None)

    return run


def _statement(
    sql: str, values: tuple[Any, ...] | dict[str, Any]
) -> Callable[[sqlite3.Connection], Cursor]:
    """The work of one statement on aiosqlite's thread: run it, take its rows (the row
    factory makes them `Row`s)."""

    def run(conn: sqlite3.Connection) -> Cursor:
        cursor = conn.execute(sql, values)
        rows = cast("list[Row]", cursor.fetchall()) if cursor.description else []
        if _QUERY.match(sql) is not None:
            return Cursor(rows, -1, None)  # sqlite3 counts a query's rowcount as -1
        if _RETURNING.search(sql):
            return Cursor(rows, len(rows), None)
        return Cursor(rows, cursor.rowcount, cursor.lastrowid)

    return run


def _commit(conn: sqlite3.Connection) -> None:
    conn.execute("COMMIT")


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
