"""The data of bench/context.py at scale ×N: one space's notes, knowledge-base files, summaries,
saved knowledge, member facts and past messages (with recall's word index), all ×N of ×1.

×1 is the size the bench always used (200 notes, 500 KB files, 1,000 summaries, 50 knowledge
entries) plus what issue 28 added: 10,000 past messages in 100 sessions of 100 lines (four
members' chatter from bench/recall_data.py, indexed as the bot's background indexer does) and
20 members with 10 facts each (every third one shared). The KB holds, per ×1, 450 shared
files, 25 of this space's own (spaces/29/) and 25 of another space's (never shown here).
"""

from __future__ import annotations

import random
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.recall_data import SPEAKERS, filler
from bench.recall_index import index_rows_sqlite

SPACE = "guild:29"
SESSION = "bench-session"
MEMBER = "1001"
SESSION_LINES = 100
BATCH = 10_000
NOW = "2026-01-01T00:00:00+00:00"
_WORDS = "tea kyoto ramen camera travel python discord music garden weather".split()


@dataclass(frozen=True)
class Scale:
    """How much of each layer's data there is at ×`factor`."""

    factor: int

    @property
    def notes(self) -> int:
        """Note pages."""
        return 200 * self.factor

    @property
    def kb_files(self) -> int:
        """Knowledge-base files (shared, this space's and another space's)."""
        return 500 * self.factor

    @property
    def summaries(self) -> int:
        """Live summaries of the bench session."""
        return 1000 * self.factor

    @property
    def knowledge(self) -> int:
        """Saved knowledge entries."""
        return 50 * self.factor

    @property
    def messages(self) -> int:
        """Past messages of the space's other sessions."""
        return 10_000 * self.factor

    @property
    def members(self) -> int:
        """Members with facts (10 each)."""
        return 20 * self.factor


def write_kb(kb_dir: Path, scale: Scale) -> None:
    """Markdown files of ~1.5 kB: shared ones, this space's own and another space's."""
    rng = random.Random(3)
    own = kb_dir / "spaces" / "29"
    other = kb_dir / "spaces" / "77"
    own.mkdir(parents=True)
    other.mkdir(parents=True)
    for n in range(scale.kb_files):
        folder = own if n % 20 == 1 else other if n % 20 == 2 else kb_dir
        topic = rng.choice(_WORDS)
        body = "\n".join(
            f"- {topic} fact {n}.{k}: " + " ".join(rng.choices(_WORDS, k=12)) for k in range(20)
        )
        (folder / f"doc{n:06d}.md").write_text(f"# {topic} notes {n}\n\n{body}\n", "utf-8")


def _message_rows(scale: Scale) -> list[tuple[Any, ...]]:
    """(id, space, session, role, content, author, created_at) of the past messages."""
    rng = random.Random(scale.factor)
    start = 1_743_498_000  # 2025-04-01
    rows: list[tuple[Any, ...]] = []
    for n in range(scale.messages):
        at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start + n * 30))
        session = f"past{n // SESSION_LINES}"
        rows.append((n + 1, SPACE, session, "user", filler(rng), rng.choice(SPEAKERS), at))
    return rows


def _messages(conn: sqlite3.Connection, scale: Scale) -> None:
    rows = _message_rows(scale)
    sessions = (len(rows) - 1) // SESSION_LINES + 1
    conn.executemany(
        "INSERT INTO sessions (id, space_id, title, source, created_at, updated_at) "
        "VALUES (?, ?, 'chat', 'import', ?, ?)",
        [(f"past{n}", SPACE, NOW, NOW) for n in range(sessions)],
    )
    for offset in range(0, len(rows), BATCH):
        batch = rows[offset : offset + BATCH]
        conn.executemany(
            "INSERT INTO messages (id, space_id, session_id, role, content, author_name, "
            "created_at, tagged_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row, NOW) for row in batch],
        )
        index_rows_sqlite(conn, batch)
    # The bench session's own recent conversation, after the past.
    conn.executemany(
        "INSERT INTO messages (space_id, session_id, role, content, author_id, created_at, "
        "tagged_at, recall_indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (SPACE, SESSION, "user" if n % 2 == 0 else "assistant", f"message {n} about tea",
             MEMBER, NOW, NOW, NOW)
            for n in range(19)
        ],
    )  # fmt: skip


def _layers(conn: sqlite3.Connection, scale: Scale) -> None:
    conn.executemany(
        "INSERT INTO memories (space_id, session_id, summary, created_at, tagged_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (
                SPACE,
                SESSION,
                f"- summary {n}: the user talked about topic {n} and liked it",
                NOW,
                NOW,
            )
            for n in range(scale.summaries)
        ],
    )
    conn.executemany(
        "INSERT INTO note_pages (space_id, title, content, position, section, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (SPACE, f"Note {n}", f"Body of note {n}. " * 40, n, f"Section {n // 20}", NOW, NOW)
            for n in range(scale.notes)
        ],
    )
    conn.executemany(
        "INSERT INTO session_note_pages (space_id, session_id, page_id, created_at) "
        "VALUES (?, ?, ?, ?)",
        [(SPACE, SESSION, n, NOW) for n in (1, 2, 3)],
    )
    conn.executemany(
        "INSERT INTO knowledge_entries (space_id, query, title, summary, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (SPACE, f"query {n}", f"Heading {n}", f"# Heading {n}\n- fact", NOW)
            for n in range(scale.knowledge)
        ],
    )
    conn.executemany(
        "INSERT INTO member_facts (space_id, member_id, member_name, fact, shared, source, "
        "created_at) VALUES (?, ?, ?, ?, ?, 'tool', ?)",
        [
            (SPACE, str(1001 + m), f"member{m}", f"member {m} likes topic {k}", int(k % 3 == 0),
             NOW)
            for m in range(scale.members)
            for k in range(10)
        ],
    )  # fmt: skip


def prefill(db_path: Path, scale: Scale) -> None:
    """Every layer's rows at `scale`, written straight to the (migrated) SQLite file."""
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute(
        "INSERT INTO sessions (id, space_id, title, source, created_at, updated_at) "
        "VALUES (?, ?, 't', 'bench', ?, ?)",
        (SESSION, SPACE, NOW, NOW),
    )
    _messages(conn, scale)
    _layers(conn, scale)
    conn.commit()
    conn.execute("ANALYZE")
    conn.commit()
    conn.close()
