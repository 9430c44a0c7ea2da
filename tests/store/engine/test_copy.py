"""`python -m bot migrate-db --to postgresql://…`: a SQLite database with every kind of row,
copied into PostgreSQL, verified, usable afterwards; a non-empty target is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.__main__ import main
from bot.store.engine.copy import CopyError, copy_sqlite_to_postgresql
from bot.store.engine.database import Database
from bot.store.repos.messages import MessageRepository
from bot.store.schema.tables import TABLE_ORDER
from bot.store.transfer import SessionExport
from tests.store.reads.test_cockpit import seed_search
from tests.store.test_spaces import fill
from tests.store.test_transfer import export_with_odd_ids, transfer_over

T = "2026-01-02T03:04:05+00:00"
OPERATOR_ROWS = (
    ("INSERT INTO local_knowledge_docs (path, title, content_hash, embedding_json, embed_model, "
     "updated_at) VALUES (?, ?, ?, ?, ?, ?)", ("a.md", "A", "h", "[0.25, 1e-300]", "e", T)),
    ("INSERT INTO app_settings (key, value, updated_at) VALUES (?, ?, ?)", ("language", '"en"', T)),
    ("INSERT INTO model_presets (label, value, created_at, api_base, api_key) "
     "VALUES (?, ?, ?, ?, ?)", ("M", "ollama/m", T, "http://127.0.0.1:1", "sk-test-key")),
    ("INSERT INTO model_token_factors (model, factor, samples, partial_counts, updated_at) "
     "VALUES (?, ?, ?, ?, ?)", ("ollama/m", 1.0 / 3.0, 7, 1, T)),
    ("INSERT INTO admin_sessions (token_hash, created_at, expires_at) VALUES (?, ?, ?)",
     ("hash", T, T)),
    ("INSERT INTO tool_calls (space_id, session_id, tool, arguments_json, ok, created_at) "
     "SELECT space_id, id, 'web_search', '{\"q\": \"東京\"}', 1, ? FROM sessions LIMIT 1", (T,)),
    ("INSERT INTO directory_channels (channel_id, space_id, name, kind, parent_id, position, "
     "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)", (987654321098765432, "guild:222", "general",
     "text", None, 3, T)),
    ("INSERT INTO member_facts (space_id, member_id, member_name, fact, shared, source, "
     "session_id, created_at) SELECT space_id, '111', 'alice', 'my cat is 東京', 1, 'request', "
     "id, ? FROM sessions LIMIT 1", (T,)),
    ("INSERT INTO member_memory (space_id, member_id, enabled, switched_at) VALUES (?, ?, ?, ?)",
     ("guild:222", "111", 0, T)),
    ("INSERT INTO token_usage (space_id, day, member_id, used, reserved, calls, updated_at) "
     "VALUES (?, ?, ?, ?, ?, ?, ?)", ("guild:222", "2026-12-07", "111", 300, 0, 1, T)),
    ("UPDATE messages SET recall_hidden = 1 WHERE id = (SELECT MIN(id) FROM messages)", ()),
    ("INSERT INTO recall_terms (id, space_id, terms) SELECT id, space_id, 'cat 東京 alic 2026' "
     "FROM messages WHERE recall_hidden = 0 LIMIT 1", ()),
    ("UPDATE messages SET recall_indexed_at = ? WHERE id IN (SELECT id FROM recall_terms)", (T,)),
    ("INSERT INTO message_embeddings (space_id, message_id, model, vector, created_at) "
     "SELECT space_id, id, 'e', X'0000803f0000c0bf', ? FROM messages WHERE recall_hidden = 0 "
     "LIMIT 1", (T,)),
    ("INSERT INTO word_pool_authors (space_id, channel_id, word, author_id) "
     "SELECT space_id, channel_id, word, '111' FROM word_pool LIMIT 1", ()),
    ("UPDATE messages SET erased_at = ? WHERE id = (SELECT MIN(id) FROM messages)", (T,)),
)  # fmt: skip


async def every_kind_of_row(path: Path) -> dict[str, int]:
    """A SQLite database holding rows in every table; returns the row count per table."""
    db = await Database.open(path)
    try:
        world = await fill(db)
        await seed_search(db)
        await transfer_over(db).import_session("guild:222", export_with_odd_ids())
        async with db.transaction() as conn:
            for sql, row in OPERATOR_ROWS:
                await conn.execute(sql, row)
            await conn.execute(  # a summary condensed into a later one
                "UPDATE memories SET condensed_into = (SELECT MAX(id) FROM memories) "
                "WHERE id = (SELECT MIN(id) FROM memories)"
            )
        del world
        counts = {t: int(await db.scalar(f"SELECT COUNT(*) FROM {t}")) for t in TABLE_ORDER}
    finally:
        await db.close()
    return counts


async def test_round_trip_copies_every_row_and_the_copy_is_usable(
    tmp_path: Path, postgres_db: str
) -> None:
    source = tmp_path / "p.db"
    counts = await every_kind_of_row(source)
    empty = [table for table, n in counts.items() if n == 0]
    assert empty == [], f"the fixture should fill every table: {empty}"
    url = postgres_db
    report = await copy_sqlite_to_postgresql(source, url)
    assert {t.table: t.rows for t in report} == counts
    pg = await Database.connect(url)
    try:
        session_id = await pg.scalar("SELECT id FROM sessions ORDER BY id LIMIT 1")
        space = await pg.scalar("SELECT space_id FROM sessions WHERE id = ?", (session_id,))
        before = int(await pg.scalar("SELECT MAX(id) FROM messages"))
        added = await MessageRepository(pg).add(space, session_id, "user", "after the move")
        assert added.id > before, "sequences continue past the copied ids"
        data = await pg.fetchone("SELECT data FROM attachments ORDER BY id LIMIT 1")
        assert data is not None and isinstance(data["data"], bytes)
    finally:
        await pg.close()
    with pytest.raises(CopyError, match="already holds data"):
        await copy_sqlite_to_postgresql(source, url)


async def test_the_command_reports_and_backup_names_pg_dump(
    tmp_path: Path,
    postgres_db: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = tmp_path / "p.db"
    await every_kind_of_row(source)
    url = postgres_db
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DB_PATH", str(source))
    assert await _run(["migrate-db", "--to", url]) == 0
    out = capsys.readouterr().out
    assert "messages:" in out and "verified" in out
    monkeypatch.setenv("DATABASE_URL", url)
    assert await _run(["backup", str(tmp_path / "b.db")]) == 1
    assert "pg_dump" in capsys.readouterr().err
    assert not (tmp_path / "b.db").exists()
    assert SessionExport  # the export model the fixture rows come from


async def _run(argv: list[str]) -> int:
    import asyncio

    return await asyncio.to_thread(main, argv)
