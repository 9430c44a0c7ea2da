"""PostgreSQL: a new database from the declaration equals the baseline upgraded by the later
migrations' PostgreSQL steps, and both engines hold one schema (in each engine's types)."""

from __future__ import annotations

from pathlib import Path

from bot.store.engine.database import Database
from bot.store.schema.fulltext import SEARCHABLE
from bot.store.schema.migrations import SCHEMA_VERSION
from bot.store.schema.tables import BASELINE_VERSION, TABLE_ORDER
from tests.fakes.postgres import TempPostgres
from tests.store.schema.catalog import (
    portable,
    postgres_at,
    postgres_catalog,
    query_postgres,
    sqlite_at,
    sqlite_catalog,
)


async def test_a_new_database_equals_the_baseline_brought_up_by_the_later_steps(
    postgres_server: TempPostgres,
) -> None:
    """Columns (type, NOT NULL, default, identity), constraints (keys, unique, foreign keys,
    checks, as the server prints them), indexes (as the server prints them), extensions."""
    old, new = postgres_server.create_database(), postgres_server.create_database()
    await postgres_at(old, BASELINE_VERSION)
    assert await query_postgres(old, "SELECT version FROM schema_version") == [(BASELINE_VERSION,)]
    await (await Database.connect(old)).close()  # every step after the baseline
    await (await Database.connect(new)).close()  # created from the declaration
    upgraded, declared = await postgres_catalog(old), await postgres_catalog(new)
    assert sorted(declared["tables"]) == sorted([*TABLE_ORDER, "schema_version"])
    assert upgraded == declared
    for url in (old, new):
        assert await query_postgres(url, "SELECT version FROM schema_version") == [
            (SCHEMA_VERSION,)
        ]


async def test_both_engines_hold_the_same_schema(
    tmp_path: Path, postgres_server: TempPostgres
) -> None:
    """SQLite's shipped history and a new PostgreSQL database agree on every table's columns
    (portable type, NOT NULL, default, key), unique keys, foreign keys, checks and indexes;
    full-text search is each engine's own, over the same declared columns."""
    lite = tmp_path / "history.db"
    await sqlite_at(lite, 1, None)
    url = postgres_server.create_database()
    await postgres_at(url)
    sqlite_side, pg_side = sqlite_catalog(lite), await postgres_catalog(url)
    pg_tables = portable(pg_side, "postgresql")
    del pg_tables["schema_version"]  # PostgreSQL's record of its version (SQLite: user_version)
    assert portable(sqlite_side, "sqlite") == pg_tables
    assert sorted(sqlite_side["virtual_tables"]) == sorted(s.fts for s in SEARCHABLE)
    trigram = {
        name
        for table in pg_side["tables"].values()
        for name, definition in table["indexes"].items()
        if "USING gin" in definition and "gin_trgm_ops" in definition
    }
    assert trigram == {
        name for s in SEARCHABLE if s.kind == "trigram" for name in s.trigram_indexes
    }
    words = {
        name
        for table in pg_side["tables"].values()
        for name, definition in table["indexes"].items()
        if "USING gin" in definition and "array_to_tsvector" in definition
    }
    assert words == {name for s in SEARCHABLE if s.kind == "words" for name in s.trigram_indexes}
    assert "pg_trgm" in pg_side["extensions"]
