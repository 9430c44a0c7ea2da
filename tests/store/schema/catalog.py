"""A database's schema read back from its catalog, as plain data two databases can be compared by.

`sqlite_catalog` reads a SQLite file (sqlite_master and the table pragmas); `postgres_catalog`
reads a PostgreSQL database (information_schema and pg_catalog, in the server's own canonical
text). `portable` reduces either to the engine-neutral shape both engines must share: column
types as SQLite names them, defaults and partial-index conditions without PostgreSQL's casts.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite
import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import create_async_engine

from bot.ops.pg_notify import asyncpg_dsn
from bot.store.engine.connection import Connection
from bot.store.engine.dialect import asyncpg_url
from bot.store.engine.migrate import migrate, migrate_postgresql

Catalog = dict[str, Any]


async def sqlite_at(path: Path, *targets: int | None) -> None:
    """Migrate the SQLite file at `path` to each of `targets` in turn (None: the current)."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        for target in targets:
            await migrate(conn, target=target)
    finally:
        await conn.close()


async def postgres_at(url: str, version: int | None = None) -> None:
    """Migrate the PostgreSQL database at `url` to `version` (None: the current)."""
    engine = create_async_engine(asyncpg_url(url), isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execution_options(isolation_level="READ COMMITTED")
            await migrate_postgresql(Connection(conn, "postgresql"), target=version)
            await conn.commit()
    finally:
        await engine.dispose()


async def run_on_postgres(url: str, statements: list[str]) -> None:
    """Run `statements` in order on the PostgreSQL database at `url`."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def query_postgres(url: str, sql: str) -> list[tuple[Any, ...]]:
    """The rows of one query on the PostgreSQL database at `url`."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        return [tuple(row) for row in await conn.fetch(sql)]
    finally:
        await conn.close()


def _flat(sql: str) -> str:
    """SQL text with its whitespace collapsed (SQLite keeps the text as written)."""
    return re.sub(r"\s+", " ", sql).strip()


def _checks(sql: str) -> list[str]:
    """Every CHECK (...) of a CREATE TABLE, parentheses balanced."""
    found = []
    for match in re.finditer(r"\bCHECK\s*\(", sql, re.IGNORECASE):
        depth, start = 1, match.end()
        end = start
        while depth:
            depth += {"(": 1, ")": -1}.get(sql[end], 0)
            end += 1
        found.append(_flat(sql[start : end - 1]))
    return sorted(found)


def _sqlite_indexes(conn: sqlite3.Connection, table: str) -> dict[str, Any]:
    """Indexes by name; those SQLite makes for UNIQUE / PRIMARY KEY by what they cover."""
    indexes: dict[str, Any] = {}
    for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list('{table}')"):
        columns = [
            (row[2], bool(row[3]))
            for row in conn.execute(f"PRAGMA index_xinfo('{name}')")
            if row[5]  # key columns only
        ]
        where = None
        if partial:
            (sql,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = ?", (name,)
            ).fetchone()
            where = _flat(re.split(r"\bWHERE\b", sql, flags=re.IGNORECASE)[1])
        key = name if origin == "c" else f"{origin}:{','.join(c for c, _ in columns)}"
        indexes[key] = {"columns": columns, "unique": bool(unique), "where": where}
    return indexes


def _sqlite_table(conn: sqlite3.Connection, table: str, sql: str) -> dict[str, Any]:
    columns = [
        {"name": name, "type": kind, "notnull": bool(notnull), "default": default, "pk": pk}
        for _, name, kind, notnull, default, pk in conn.execute(f"PRAGMA table_info('{table}')")
    ]
    keys: dict[int, dict[str, Any]] = {}
    for fk_id, _, target, source, to, on_update, on_delete, _ in conn.execute(
        f"PRAGMA foreign_key_list('{table}')"
    ):
        key = keys.setdefault(
            fk_id, {"table": target, "from": [], "to": [], "on_update": on_update}
        )
        key["from"].append(source)
        key["to"].append(to)
        key["on_delete"] = on_delete
    return {
        "columns": columns,
        "indexes": _sqlite_indexes(conn, table),
        "foreign_keys": sorted(keys.values(), key=repr),
        "checks": _checks(sql),
        "autoincrement": "AUTOINCREMENT" in sql.upper(),
    }


def sqlite_catalog(path: Path) -> Catalog:
    """Tables (columns, indexes, foreign keys, checks), virtual tables and triggers of a file."""
    conn = sqlite3.connect(path)
    try:
        objects = conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "AND type IN ('table', 'trigger')"
        ).fetchall()
        tables = [(name, sql) for kind, name, sql in objects if kind == "table"]
        virtual = {n: _flat(s) for n, s in tables if s.upper().startswith("CREATE VIRTUAL")}
        shadow = [n for n, _ in tables if n not in virtual and _is_shadow(n, virtual)]
        return {
            "tables": {
                name: _sqlite_table(conn, name, sql)
                for name, sql in tables
                if name not in virtual and name not in shadow
            },
            "virtual_tables": virtual,
            "shadow_tables": sorted(shadow),
            "triggers": {name: _flat(sql) for kind, name, sql in objects if kind == "trigger"},
        }
    finally:
        conn.close()


def _is_shadow(name: str, virtual: dict[str, str]) -> bool:
    """FTS5 keeps each virtual table's data in shadow tables named after it."""
    return any(name.startswith(f"{table}_") for table in virtual)


POSTGRES_QUERIES = {
    "columns": """
        SELECT table_name, column_name, data_type, is_nullable = 'NO', column_default,
               is_identity = 'YES', identity_generation
        FROM information_schema.columns WHERE table_schema = 'public'
        ORDER BY table_name, ordinal_position
    """,
    "constraints": """
        SELECT c.conrelid::regclass::text, c.contype::text, pg_get_constraintdef(c.oid),
               CASE WHEN c.contype IN ('p', 'u') THEN c.conindid::regclass::text END
        FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
        WHERE n.nspname = 'public' ORDER BY 1, 2, 3
    """,
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' ORDER BY tablename, indexname
    """,
    "extensions": "SELECT extname FROM pg_extension ORDER BY extname",
}


async def postgres_catalog(url: str) -> Catalog:
    """Columns, constraints, indexes and extensions of a PostgreSQL database, as it says them."""
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        found = {key: await conn.fetch(sql) for key, sql in POSTGRES_QUERIES.items()}
    finally:
        await conn.close()
    tables: dict[str, Any] = {}
    for table, name, kind, notnull, default, identity, generation in found["columns"]:
        entry = tables.setdefault(table, {"columns": [], "constraints": [], "indexes": {}})
        entry["columns"].append(
            {
                "name": name,
                "type": kind,
                "notnull": notnull,
                "default": default,
                "identity": generation if identity else None,
            }
        )
    for table, kind, definition, index in found["constraints"]:
        tables[table]["constraints"].append((kind, definition, index))
    for table, name, definition in found["indexes"]:
        tables[table]["indexes"][name] = definition
    return {"tables": tables, "extensions": [row[0] for row in found["extensions"]]}


# PostgreSQL's type names as SQLite's (the declaration's portable types).
PORTABLE_TYPES = {"bigint": "INTEGER", "text": "TEXT", "double precision": "REAL", "bytea": "BLOB"}


def _neutral(sql: str | None) -> str | None:
    """A default or index condition without PostgreSQL's casts and parentheses."""
    if sql is None:
        return None
    return _flat(re.sub(r"::[a-z ]+", "", sql).replace("(", "").replace(")", ""))


def _names(listed: str) -> list[str]:
    """Names in a list PostgreSQL printed (it quotes those that are keywords)."""
    return [part.strip().strip('"') for part in listed.split(",")]


def _portable_sqlite(table: dict[str, Any]) -> dict[str, Any]:
    indexes = table["indexes"]
    return {
        "columns": [
            # SQLite lets a PRIMARY KEY column hold NULL unless told NOT NULL; the store never
            # writes one, and PostgreSQL's primary keys are NOT NULL by definition.
            (c["name"], c["type"], c["notnull"] or c["pk"] > 0, _neutral(c["default"]), c["pk"])
            for c in table["columns"]
        ],
        "unique": sorted(
            tuple(c for c, _ in index["columns"])
            for key, index in indexes.items()
            if key.startswith("u:")
        ),
        "indexes": {
            key: (index["columns"], index["unique"], _neutral(index["where"]))
            for key, index in indexes.items()
            if ":" not in key
        },
        "foreign_keys": sorted(
            (tuple(fk["from"]), fk["table"], tuple(fk["to"]), fk["on_delete"])
            for fk in table["foreign_keys"]
        ),
        "checks": len(table["checks"]),
    }


_INDEX = re.compile(r"CREATE (UNIQUE )?INDEX \S+ ON \S+ USING (\w+) \((.*?)\)(?: WHERE (.*))?$")
_FOREIGN_KEY = re.compile(
    r"FOREIGN KEY \((.*?)\) REFERENCES (\w+)\((.*?)\)(?: ON DELETE (SET NULL|CASCADE))?"
)


def _portable_postgres(table: dict[str, Any]) -> dict[str, Any]:
    constraints = table["constraints"]
    primary = [_names(d[len("PRIMARY KEY (") : -1]) for k, d, _ in constraints if k == "p"]
    pk = primary[0] if primary else []
    backing = {index for _, _, index in constraints if index}
    indexes = {}
    for name, definition in table["indexes"].items():
        match = _INDEX.match(definition)
        assert match, definition
        unique, method, columns, where = match.groups()
        if name in backing or method != "btree":
            continue  # constraints' own indexes; full-text indexes are engine-specific
        listed = [(c.removesuffix(" DESC"), c.endswith(" DESC")) for c in _names(columns)]
        indexes[name] = (listed, unique is not None, _neutral(where))
    foreign_keys = []
    for kind, definition, _ in constraints:
        if kind == "f" and (match := _FOREIGN_KEY.match(definition)):
            source, target, to, on_delete = match.groups()
            foreign_keys.append(
                (tuple(_names(source)), target, tuple(_names(to)), on_delete or "NO ACTION")
            )
    return {
        "columns": [
            (
                c["name"],
                PORTABLE_TYPES[c["type"]],
                c["notnull"],
                _neutral(c["default"]),
                pk.index(c["name"]) + 1 if c["name"] in pk else 0,
            )
            for c in table["columns"]
        ],
        "unique": sorted(
            tuple(_names(d[len("UNIQUE (") : -1])) for k, d, _ in constraints if k == "u"
        ),
        "indexes": indexes,
        "foreign_keys": sorted(foreign_keys),
        "checks": sum(1 for k, _, _ in constraints if k == "c"),
    }


def portable(catalog: Catalog, engine: str) -> dict[str, Any]:
    """The engine-neutral shape of every table: what both engines must agree on."""
    shape = _portable_sqlite if engine == "sqlite" else _portable_postgres
    return {name: shape(table) for name, table in catalog["tables"].items()}
