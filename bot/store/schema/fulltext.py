"""Full-text search: which columns are searched, declared once; how, written per engine.

This is where the engines really differ (see `bot.store.reads.search` for why trigrams):

- SQLite: an FTS5 table with the `trigram` tokenizer per searched table, an external-content
  table over the real rows kept in step by triggers on insert, update (of the indexed columns
  only) and delete, so no write path can forget it. A migration that rebuilds a searched table
  (create, copy, drop, rename) drops its triggers with it and must create them again
  (`fts_triggers`) and rebuild the index.
- PostgreSQL: the pg_trgm extension and one trigram GIN index per searched column, serving
  ILIKE; ordinary indexes, nothing to keep in step by hand.

Recall's term index (`recall_terms`, version 7) holds text already cut into words by the
indexer (space-separated, letters and digits only), so it is searched by words, not trigrams:
SQLite's FTS5 `unicode61` tokenizer (which then only splits on the spaces) ranked by bm25,
PostgreSQL a GIN index over `array_to_tsvector(string_to_array(terms, ' '))` — the words as
lexemes as they are, with no text-search parser or dictionary in between (`WORDS_TSVECTOR`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from bot.store.schema.ddl import Engine


@dataclass(frozen=True)
class Searchable:
    """The searched columns of one table, with each engine's index names."""

    table: str
    columns: tuple[str, ...]
    fts: str  # SQLite's FTS5 table
    trigram_indexes: tuple[str, ...]  # PostgreSQL's GIN index of each column, in order
    since: int = 0
    # "words": pre-tokenised text (unicode61 on SQLite, a lexeme-array GIN on PostgreSQL).
    kind: str = "trigram"


SEARCHABLE: Final[tuple[Searchable, ...]] = (
    Searchable("messages", ("content",), "messages_fts", ("ix_messages_trgm",)),
    Searchable(
        "note_pages",
        ("title", "content"),
        "note_pages_fts",
        ("ix_note_pages_title_trgm", "ix_note_pages_content_trgm"),
    ),
    Searchable(
        "knowledge_entries",
        ("title", "query", "summary"),
        "knowledge_fts",
        ("ix_knowledge_title_trgm", "ix_knowledge_query_trgm", "ix_knowledge_summary_trgm"),
    ),
    Searchable(
        "recall_terms", ("terms",), "recall_terms_fts", ("ix_recall_terms_words",), 7, "words"
    ),
)

TRIGRAM_EXTENSION: Final = "CREATE EXTENSION IF NOT EXISTS pg_trgm"


def words_tsvector(column: str) -> str:
    """PostgreSQL: the lexemes of a pre-tokenised column, as its GIN index is built on."""
    return f"array_to_tsvector(string_to_array({column}, ' '))"


def fts_triggers(fts: str, content: str, columns: tuple[str, ...]) -> tuple[str, ...]:
    """The insert, delete and update triggers keeping `fts` in step with `content`."""
    cols = ", ".join(columns)
    new = ", ".join(f"new.{column}" for column in columns)
    old = ", ".join(f"old.{column}" for column in columns)
    add = f"INSERT INTO {fts} (rowid, {cols}) VALUES (new.id, {new});"
    remove = f"INSERT INTO {fts} ({fts}, rowid, {cols}) VALUES ('delete', old.id, {old});"
    return (
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {content} BEGIN {add} END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {content} BEGIN {remove} END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE OF {cols} ON {content} BEGIN {remove} {add} END",
    )


_TOKENIZERS: Final = {"trigram": "trigram", "words": "unicode61 remove_diacritics 0"}


def _sqlite(item: Searchable, *, rebuild: bool) -> list[str]:
    table = (
        f"CREATE VIRTUAL TABLE {item.fts} USING fts5({', '.join(item.columns)}, "
        f"content='{item.table}', content_rowid='id', tokenize='{_TOKENIZERS[item.kind]}')"
    )
    # The index starts empty: rows already in the table are indexed by a rebuild.
    filled = [f"INSERT INTO {item.fts} ({item.fts}) VALUES ('rebuild')"] if rebuild else []
    return [table, *fts_triggers(item.fts, item.table, item.columns), *filled]


def _postgresql(item: Searchable) -> list[str]:
    if item.kind == "words":
        (name,), (column,) = item.trigram_indexes, item.columns
        return [f"CREATE INDEX {name} ON {item.table} USING gin ({words_tsvector(column)})"]
    return [
        f"CREATE INDEX {name} ON {item.table} USING gin ({column} gin_trgm_ops)"
        for name, column in zip(item.trigram_indexes, item.columns, strict=True)
    ]


def _render(engine: Engine, items: Iterable[Searchable], *, rebuild: bool) -> list[str]:
    chosen = list(items)
    if engine == "sqlite":
        return [statement for item in chosen for statement in _sqlite(item, rebuild=rebuild)]
    indexes = [statement for item in chosen for statement in _postgresql(item)]
    return [TRIGRAM_EXTENSION, *indexes] if indexes else []


def fulltext_as_of(
    engine: Engine, version: int, searchable: Iterable[Searchable] = SEARCHABLE
) -> list[str]:
    """The full-text parts of a new, empty database at `version`."""
    return _render(engine, (s for s in searchable if s.since <= version), rebuild=False)


def fulltext_added_in(
    engine: Engine, version: int, searchable: Iterable[Searchable] = SEARCHABLE
) -> list[str]:
    """The full-text parts `version` added, indexing the rows already there."""
    return _render(engine, (s for s in searchable if s.since == version), rebuild=True)
