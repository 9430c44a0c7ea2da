"""`added_in(N)`: a migration derived from what a declaration marks `since=N`, on both engines.

A throwaway declaration, as the next wave would write one: a new table, new columns on an old
table, new indexes, a new searchable table. A database of the version before, with rows, gets
the derived steps and then holds exactly what a new database of version N holds.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from bot.store.schema.ddl import (
    AUTO_ID,
    INTEGER,
    TEXT,
    Column,
    Engine,
    Index,
    References,
    Table,
    schema_as_of,
)
from bot.store.schema.fulltext import Searchable, fulltext_as_of
from bot.store.schema.migrations import added_in
from tests.fakes.postgres import TempPostgres
from tests.store.schema.catalog import (
    postgres_catalog,
    query_postgres,
    run_on_postgres,
    sqlite_catalog,
)

TABLES = (
    Table("owners", (Column("id", TEXT, primary_key=True), Column("name", TEXT, default=""))),
    Table(
        "pets",
        (
            Column("id", AUTO_ID),
            Column("owner_id", TEXT, references=References("owners", "CASCADE")),
            Column("name", TEXT),
            Column("nickname", TEXT, null=True, since=6),
            Column("legs", INTEGER, default=4, since=6),
        ),
        indexes=(Index("ix_pets_owner", ("owner_id",)), Index("ix_pets_name", ("name",), since=6)),
    ),
    Table(
        "visits",
        (
            Column("id", AUTO_ID),
            Column("pet_id", INTEGER, references=References("pets", "CASCADE")),
            Column("note", TEXT),
        ),
        indexes=(Index("ix_visits_pet", ("pet_id", "id DESC")),),
        since=6,
    ),
)
SEARCHED = (Searchable("visits", ("note",), "visits_fts", ("ix_visits_note_trgm",), since=6),)
ROWS = (
    "INSERT INTO owners (id) VALUES ('ann')",
    "INSERT INTO pets (owner_id, name) VALUES ('ann', 'Rex')",
)


def at(engine: Engine, version: int) -> list[str]:
    """A new database of the throwaway declaration at `version`."""
    return [*schema_as_of(TABLES, engine, version), *fulltext_as_of(engine, version, SEARCHED)]


def test_the_steps_are_the_additions_in_order() -> None:
    migration = added_in(6, TABLES, SEARCHED)
    assert isinstance(migration.sqlite, tuple) and isinstance(migration.postgresql, tuple)
    assert [s.split("(")[0].strip() for s in migration.postgresql] == [
        "ALTER TABLE pets ADD COLUMN nickname TEXT",
        "ALTER TABLE pets ADD COLUMN legs BIGINT NOT NULL DEFAULT 4",
        "CREATE TABLE visits",
        "CREATE INDEX ix_pets_name ON pets",
        "CREATE INDEX ix_visits_pet ON visits",
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        "CREATE INDEX ix_visits_note_trgm ON visits USING gin",
    ]
    assert migration.sqlite[-1] == "INSERT INTO visits_fts (visits_fts) VALUES ('rebuild')"
    with pytest.raises(ValueError, match="nothing in the declaration carries since=5"):
        added_in(5, TABLES, SEARCHED)


def test_on_sqlite_the_derived_steps_reach_the_declared_version(tmp_path: Path) -> None:
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    with closing(sqlite3.connect(old, isolation_level=None)) as conn:
        for statement in [*at("sqlite", 5), *ROWS, *added_in(6, TABLES, SEARCHED).sqlite]:
            conn.execute(statement)
        conn.execute("INSERT INTO visits (pet_id, note) VALUES (1, 'a limp on the left paw')")
        assert conn.execute("SELECT name, nickname, legs FROM pets").fetchall() == [
            ("Rex", None, 4)
        ]
        found = conn.execute("SELECT rowid FROM visits_fts WHERE note MATCH 'left paw'").fetchall()
        assert found == [(1,)]
    with closing(sqlite3.connect(new, isolation_level=None)) as conn:
        for statement in at("sqlite", 6):
            conn.execute(statement)
    assert sqlite_catalog(old) == sqlite_catalog(new)


async def test_on_postgresql_the_derived_steps_reach_the_declared_version(
    postgres_server: TempPostgres,
) -> None:
    old, new = postgres_server.create_database(), postgres_server.create_database()
    await run_on_postgres(old, [*at("postgresql", 5), *ROWS])
    await run_on_postgres(old, list(added_in(6, TABLES, SEARCHED).postgresql))
    await run_on_postgres(new, at("postgresql", 6))
    assert await postgres_catalog(old) == await postgres_catalog(new)
    assert await query_postgres(old, "SELECT name, nickname, legs FROM pets") == [("Rex", None, 4)]
