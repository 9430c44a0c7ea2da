"""How bench/recall.py fills the background recall index: as the bot does (the indexer with
the Janome worker) for the imported conversations; for the generated millions, each distinct
text's words once (the chatter repeats), written with executemany beside the messages."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from bot.memory.japanese import JapaneseAnalyzer
from bot.memory.recall_index import RecallIndexer
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.reads.recall_words import index_text

_NOUNS: dict[str, list[str]] = {}
_WORDS: dict[tuple[str, str], str] = {}


async def fill_index(db: Database, repos: Repositories) -> float:
    """Fill the recall index as the bot's background indexer does; returns the seconds."""
    analyzer = JapaneseAnalyzer()
    try:
        await analyzer.warm_up()
        started = time.perf_counter()
        await RecallIndexer(analyzer, repos.recall_terms).backfill()
        elapsed = time.perf_counter() - started
        texts = [
            str(row["content"])
            for row in await db.fetchall("SELECT DISTINCT content FROM messages")
        ]
        for text, nouns in zip(texts, await analyzer.nouns_many(texts), strict=True):
            _NOUNS[text] = nouns
    finally:
        await analyzer.close()
    return round(elapsed, 2)


def index_rows_sqlite(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> None:
    """Index freshly built rows (id, space, session, role, content, author, created_at)."""
    now = "2026-12-07T00:00:00+00:00"
    conn.executemany(
        "INSERT INTO recall_terms (id, space_id, terms) VALUES (?, ?, ?)",
        [(r[0], r[1], index_words(r[4], r[5], r[6])) for r in rows],
    )
    conn.executemany(
        "UPDATE messages SET recall_indexed_at = ? WHERE id = ?", [(now, r[0]) for r in rows]
    )


def index_words(content: str, author: str, created_at: str) -> str:
    """`index_text`, computed once per (text, speaker, month): the chatter repeats."""
    key = (content + "\x00" + author, created_at[:7])
    if key not in _WORDS:
        _WORDS[key] = index_text(content, author, created_at, _NOUNS.get(content, ()))
    return _WORDS[key]
