"""`migrate-db`: copy a SQLite database into an empty PostgreSQL database, verified.

Tables go in dependency order (a table after those it references), in batches inside one
PostgreSQL transaction; identity sequences are reset past the copied ids; then every table is
compared row for row (a count and a checksum over every row's values, in id order).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.errors import StartupError
from bot.store.engine.connection import Connection
from bot.store.engine.database import Database
from bot.store.engine.dialect import redact
from bot.store.schema.tables import TABLE_ORDER

log = logging.getLogger(__name__)

BATCH_ROWS = 500


class CopyError(StartupError):
    """The copy was refused or did not verify; the message names what to do."""


@dataclass(frozen=True)
class TableCopy:
    """One table's rows and its checksum (the same on both sides)."""

    table: str
    rows: int
    checksum: str


def _key(table: str, columns: list[str]) -> str:
    return "id" if "id" in columns else ", ".join(columns[:3])


# Columns referencing a later row of their own table: filled after the rows are in.
SELF_REFERENCES: dict[str, str] = {"memories": "condensed_into"}


async def _columns(db: Database, table: str) -> list[str]:
    found = await db.fetchall(f"SELECT name FROM pragma_table_info('{table}') ORDER BY cid")
    return [str(row[0]) for row in found]


def _digest(values: list[Any], state: Any) -> None:
    for value in values:
        plain = bytes(value) if isinstance(value, memoryview | bytearray) else value
        state.update(repr(plain).encode())
        state.update(b"\x1f")
    state.update(b"\x1e")


async def _checksum(db: Database, table: str, columns: list[str]) -> TableCopy:
    state = hashlib.sha256()
    rows = await db.fetchall(
        f"SELECT {', '.join(columns)} FROM {table} ORDER BY {_key(table, columns)}"
    )
    for row in rows:
        _digest(list(row), state)
    return TableCopy(table, len(rows), state.hexdigest())


async def _insert(conn: Connection, table: str, columns: list[str], rows: list[Any]) -> None:
    marks = ", ".join("?" for _ in columns)
    await conn.executemany(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
        [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows],
    )


async def copy_sqlite_to_postgresql(source: Path, url: str) -> list[TableCopy]:
    """Copy the SQLite database at `source` into the empty PostgreSQL database at `url`."""
    if not await asyncio.to_thread(source.is_file):
        raise CopyError(f"There is no SQLite database at {source}; check DB_PATH.")
    lite = await Database.open(source)
    try:
        pg = await Database.connect(url)
    except BaseException:
        await lite.close()
        raise
    try:
        return await _copy(lite, pg, url)
    finally:
        await pg.close()
        await lite.close()


async def _copy(lite: Database, pg: Database, url: str) -> list[TableCopy]:
    for table in TABLE_ORDER:
        if await pg.scalar(f"SELECT EXISTS (SELECT 1 FROM {table})"):
            raise CopyError(
                f"The PostgreSQL database {redact(url)} already holds data ({table}); "
                "migrate-db only fills an empty database: create a new one and retry."
            )
    plan = {table: await _columns(lite, table) for table in TABLE_ORDER}
    async with pg.transaction() as conn:
        for table in TABLE_ORDER:
            columns = plan[table]
            rows = await lite.fetchall(
                f"SELECT {', '.join(columns)} FROM {table} ORDER BY {_key(table, columns)}"
            )
            later = SELF_REFERENCES.get(table)
            values = [list(row) for row in rows]
            if later is not None:
                at = columns.index(later)
                links = [(row[at], row[0]) for row in values if row[at] is not None]
                for row in values:
                    row[at] = None
            for start in range(0, len(values), BATCH_ROWS):
                await _insert(conn, table, columns, values[start : start + BATCH_ROWS])
            if later is not None:
                await conn.executemany(f"UPDATE {table} SET {later} = ? WHERE id = ?", links)
            identity = await conn.execute_fetchall(
                "SELECT pg_get_serial_sequence(?, 'id') IS NOT NULL "
                "FROM information_schema.columns WHERE table_name = ? AND column_name = 'id'",
                (table, table),
            )
            if identity and identity[0][0]:
                await conn.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
                )
            log.info("migrate-db: %s: %d rows", table, len(rows))
    report: list[TableCopy] = []
    for table in TABLE_ORDER:
        mine, theirs = (
            await _checksum(lite, table, plan[table]),
            await _checksum(pg, table, plan[table]),
        )
        if mine != theirs:
            raise CopyError(
                f"migrate-db: {table} differs after the copy ({mine.rows} rows in SQLite, "
                f"{theirs.rows} in PostgreSQL); the PostgreSQL database was left as it is."
            )
        report.append(mine)
    return report
