"""The schema's history: one `Migration` per version, each with SQLite and PostgreSQL steps.

The current schema is declared once, in `bot.store.schema.tables` (community and operator
tables, in the `ddl` vocabulary; plus the engine-specific full-text parts in
`bot.store.schema.fulltext`); `schema_at` renders it for either engine.
`bot.store.engine.migrate` creates an empty database straight from it, and brings an existing
one up through the migrations after the database's version.

Versions 1 to 4 are history written out by hand for SQLite (`v1_initial` … `v4_cockpit`);
PostgreSQL starts at BASELINE_VERSION (4), the declaration rendered as of that version.
Never edit a migration that has shipped: append one. A test builds a SQLite file through the
whole history and compares it with one created from the declaration, so the two cannot drift.

Adding a table (or a nullable or defaulted column, or an index) in the next version N:

1. declare it with `since=N` in `community_tables.py` (rows in a space) or
   `operator_tables.py` (a column goes last in its table; a searched one in `fulltext.py`);
2. append `added_in(N)` to MIGRATIONS below: both engines' steps come from the declaration;
3. run tests/store: the structural tests compare the history, the declaration and both engines.

The declaration only grows: what a version created keeps describing that version, so the
schema as of any version from the baseline on can still be rendered. A change it cannot
express as an addition (a changed column, a rebuilt table, data moved) is a hand-written
`Migration` for both engines; before it, write out as text the shipped derived steps and the
baseline it would alter (`test_history.py` pins the shipped derived steps, so it says which).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiosqlite

from bot.store.schema.ddl import Engine, Table, schema_as_of
from bot.store.schema.ddl import added_in as tables_added_in
from bot.store.schema.fulltext import SEARCHABLE, Searchable, fulltext_added_in, fulltext_as_of
from bot.store.schema.tables import BASELINE_VERSION, TABLES
from bot.store.schema.v1_initial import INITIAL_SQL
from bot.store.schema.v2_token_factors import FACTORS_SQL
from bot.store.schema.v3_spaces import MigrationContext, migrate_to_spaces
from bot.store.schema.v4_cockpit import migrate_cockpit


class SqlConnection(Protocol):
    """What a PostgreSQL step needs of the engine's connection (`?` placeholders)."""

    async def execute(self, sql: str, params: Any = ()) -> Any:
        """Run one statement."""
        ...


# A step is an SQL script (statements split on ";"), a tuple of statements (which may hold
# semicolons, as trigger bodies do) or, when SQL alone cannot do it, Python.
SqliteStep = (
    str | tuple[str, ...] | Callable[[aiosqlite.Connection, MigrationContext], Awaitable[None]]
)
PostgresStep = str | tuple[str, ...] | Callable[[SqlConnection, MigrationContext], Awaitable[None]]

# A migration's PostgreSQL part when the PostgreSQL baseline schema already contains it.
IN_BASELINE: Final = "-- in the PostgreSQL baseline schema"


@dataclass(frozen=True)
class Migration:
    """One schema version: how SQLite gets there and how PostgreSQL gets there."""

    sqlite: SqliteStep
    postgresql: PostgresStep


def added_in(
    version: int,
    tables: Iterable[Table] = TABLES,
    searchable: Iterable[Searchable] = SEARCHABLE,
) -> Migration:
    """The migration to `version` derived from the declaration: what carries `since=version`."""
    declared, searched = tuple(tables), tuple(searchable)

    def steps(engine: Engine) -> tuple[str, ...]:
        return (
            *tables_added_in(declared, engine, version),
            *fulltext_added_in(engine, version, searched),
        )

    found = steps("sqlite")
    if not found:
        raise ValueError(f"nothing in the declaration carries since={version}")
    return Migration(sqlite=found, postgresql=steps("postgresql"))


_MARK_SEEDED = (
    "UPDATE model_presets SET seeded = 1 WHERE id = (SELECT MIN(id) FROM model_presets) "
    "AND api_base IS NULL AND api_key IS NULL "
    "AND (value = label OR substr(value, length(value) - length(label)) = '/' || label)"
)


def _with_steps(migration: Migration, *statements: str) -> Migration:
    """`migration` followed by `statements` (data changes) on both engines."""
    assert isinstance(migration.sqlite, tuple) and isinstance(migration.postgresql, tuple)
    return Migration(
        sqlite=(*migration.sqlite, *statements),
        postgresql=(*migration.postgresql, *statements),
    )


# Each entry is one migration; its 1-based position is the version it leaves behind.
MIGRATIONS: tuple[Migration, ...] = (
    # 1: the first schema.
    Migration(sqlite=INITIAL_SQL, postgresql=IN_BASELINE),
    # 2: per-model token estimator correction.
    Migration(sqlite=FACTORS_SQL, postgresql=IN_BASELINE),
    # 3: spaces — `space_id` on every community row, the `spaces` table, the word pool.
    Migration(sqlite=migrate_to_spaces, postgresql=IN_BASELINE),
    # 4: the admin cockpit — tool_calls, full-text indexes, activity indexes.
    Migration(sqlite=migrate_cockpit, postgresql=IN_BASELINE),
    # 5: model presets as connections (address, key); the directory of Discord channel names.
    added_in(5),
    # 6: member memory (facts per space and member, the per-member switch); messages written
    # with memory off are marked hidden from recall.
    added_in(6),
    # 7: recall at scale — the space's newest messages by index, and the background term
    # index (`recall_terms`: Janome words, English stems, speaker, date) with its full-text
    # index; `messages.recall_indexed_at` marks what the indexer handled.
    added_in(7),
    # 8: api_logs.tokens_estimated — a call's token counts are the project's estimate (a
    # stream stopped early, a server that sends none).
    added_in(8),
    # 9: the connection seeded from LLM_MODEL follows it (`model_presets.seeded`). Of existing
    # rows, the first one looks seeded when it is what the seed wrote: no address, no key,
    # its label the model string's name.
    _with_steps(added_in(9), _MARK_SEEDED),
    # 10: recall's message embeddings (`message_embeddings`: one vector per message and
    # embedding model, filled in the background when an embedding model is configured).
    added_in(10),
    # 11: who each word of a channel's word pool came from (`word_pool_authors`), so that
    # erasing a member takes the words they brought; `messages.erased_at` marks an erased
    # message, so that a write racing the erase (an answer, tags, pool words) keeps out.
    added_in(11),
    # 12: `note_versions`, a number each note write of a space draws anew, so a process's
    # cached outline of the space's pages is read again only after a write.
    added_in(12),
    # 13: `member_facts.message_id`, the message a fact was taken from, so that forgetting
    # the fact blanks what it was said in; `spaces.timezone`, a server's own time zone.
    added_in(13),
    # 14: `token_usage`, the tokens a space's turns used per day, per member and in all, with
    # the estimates of calls under way reserved against the daily budgets.
    added_in(14),
    # 15: `tool_calls.approval` and `approved_by`: a tool with side effects asked its member
    # first (Allow / Deny), and who decided.
    added_in(15),
    # 16: `topic_posts.answered_at`, when a person answered a topic opener within its reply
    # window, for the answer rate and the backoff of unanswered openers.
    added_in(16),
)

SCHEMA_VERSION: Final = len(MIGRATIONS)


def schema_at(
    engine: Engine,
    version: int = SCHEMA_VERSION,
    tables: Iterable[Table] = TABLES,
    searchable: Iterable[Searchable] = SEARCHABLE,
) -> list[str]:
    """Every statement creating the declared schema as of `version` on an empty database."""
    if not BASELINE_VERSION <= version <= SCHEMA_VERSION:
        raise ValueError(
            f"the declaration renders versions {BASELINE_VERSION} to {SCHEMA_VERSION}, "
            f"not {version}"
        )
    return [*schema_as_of(tables, engine, version), *fulltext_as_of(engine, version, searchable)]


def number_of(step: SqliteStep) -> int:
    """The schema version the migration with this SQLite step leaves behind."""
    return next(n for n, m in enumerate(MIGRATIONS, start=1) if m.sqlite is step)
