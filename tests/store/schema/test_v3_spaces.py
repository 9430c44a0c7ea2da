"""Migration to spaces: a database of the previous schema, with data, opened by this code."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import aiosqlite
import pytest

from bot.services import ServiceOptions, open_services
from bot.store.engine.database import Database
from bot.store.engine.migrate import migrate
from bot.store.schema.migrations import SCHEMA_VERSION, number_of
from bot.store.schema.v3_spaces import MigrationContext, migrate_to_spaces
from tests.conftest import SettingsFactory

T = "2026-01-01T00:00:00.000000+00:00"
LOCAL = "local:home"
# The last schema version without spaces (the release this migration upgrades from).
BEFORE_SPACES = number_of(migrate_to_spaces) - 1


async def old_database(path: Path) -> None:
    """A database at the schema before spaces with rows of every kind."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    await conn.execute("PRAGMA foreign_keys=ON")
    assert await migrate(conn, target=BEFORE_SPACES) == BEFORE_SPACES
    await conn.executescript(
        f"""
        BEGIN;
        INSERT INTO sessions (id, title, source, discord_channel_id, discord_guild_id,
                              created_at, updated_at) VALUES
            ('thread-a', 'A', 'discord', 501, 100, '{T}', '{T}'),
            ('thread-b', 'B', 'discord', 601, 200, '{T}', '{T}'),
            ('dm-7', 'DM', 'discord', 700, NULL, '{T}', '{T}'),
            ('dm-odd', 'DM without a user', 'discord', 701, NULL, '{T}', '{T}'),
            ('term', 'terminal', 'terminal', NULL, NULL, '{T}', '{T}'),
            ('api', 'admin chat', 'api', NULL, NULL, '{T}', '{T}'),
            ('opener', 'on a topic', 'discord', 9001, 100, '{T}', '{T}');
        INSERT INTO memories (id, session_id, summary, level, created_at) VALUES
            (1, 'thread-a', 'summary a', 0, '{T}'),
            (2, 'dm-7', 'summary dm', 0, '{T}');
        INSERT INTO messages (id, session_id, role, content, author_id, discord_message_id,
                              memory_id, archived_at, created_at) VALUES
            (1, 'thread-a', 'user', 'hello a', '1', 11, 1, '{T}', '{T}'),
            (2, 'thread-a', 'assistant', 'answer a', NULL, NULL, NULL, NULL, '{T}'),
            (3, 'thread-b', 'user', 'hello b', '2', 12, NULL, NULL, '{T}'),
            (4, 'dm-7', 'assistant', 'bot first', NULL, NULL, NULL, NULL, '{T}'),
            (5, 'dm-7', 'user', 'hi in dm', '7', 13, 2, '{T}', '{T}'),
            (6, 'term', 'user', 'hi terminal', NULL, NULL, NULL, NULL, '{T}'),
            (7, 'api', 'user', 'hi api', 'admin', NULL, NULL, NULL, '{T}'),
            (8, 'dm-odd', 'assistant', 'only the bot', NULL, NULL, NULL, NULL, '{T}');
        INSERT INTO message_tags (message_id, tag, created_at) VALUES
            (1, 'tag-a', '{T}'), (3, 'tag-b', '{T}'), (5, 'tag-dm', '{T}');
        INSERT INTO memory_tags (memory_id, tag, created_at) VALUES
            (1, 'memo-a', '{T}'), (2, 'memo-dm', '{T}');
        INSERT INTO knowledge_entries (id, query, title, summary, session_id, md_path, created_at)
        VALUES
            (1, 'qa', 'ka', '- a', 'thread-a', 'web_search/a.md', '{T}'),
            (2, 'qd', 'kd', '- d', 'dm-7', 'web_search/d.md', '{T}'),
            (3, 'qx', 'kx', '- x', NULL, 'web_search/x.md', '{T}');
        INSERT INTO knowledge_sources (entry_id, title, url) VALUES
            (1, 's', 'https://a.example'), (3, 's', 'https://x.example');
        INSERT INTO note_pages (id, title, content, position, section, created_at, updated_at)
        VALUES
            (1, 'Only A', 'a', 0, 's1', '{T}', '{T}'),
            (2, 'A and B', 'ab', 1, 's1', '{T}', '{T}'),
            (3, 'Unlinked', 'u', 2, 's2', '{T}', '{T}'),
            (4, 'Only B', 'b', 3, 's2', '{T}', '{T}'),
            (5, 'A twice', 'a2', 4, 's3', '{T}', '{T}');
        INSERT INTO session_note_pages (session_id, page_id, created_at) VALUES
            ('thread-a', 1, '{T}'), ('thread-a', 2, '{T}'), ('thread-b', 2, '{T}'),
            ('thread-b', 4, '{T}'), ('thread-a', 5, '{T}'), ('opener', 5, '{T}'),
            ('term', 2, '{T}');
        INSERT INTO attachments (id, session_id, filename, size, data, created_at) VALUES
            ('att-a', 'thread-a', 'a.txt', 1, x'61', '{T}'),
            ('att-dm', 'dm-7', 'd.txt', 1, x'64', '{T}');
        INSERT INTO topic_channels (channel_id, guild_id, enabled, updated_at) VALUES
            (500, 100, 1, '{T}'), (800, NULL, 0, '{T}');
        INSERT INTO topic_posts (id, channel_id, topic, content, discord_message_id, posted_at)
        VALUES (1, 500, 'cats', 'Cats?', 9001, '{T}'), (2, 999, 'orphan', 'x', 9002, '{T}');
        INSERT INTO api_logs (session_id, model, request_json, latency_ms, created_at) VALUES
            ('thread-a', 'm', '{{}}', 1, '{T}'), (NULL, 'm', '{{}}', 1, '{T}'),
            ('gone', 'm', '{{}}', 1, '{T}');
        INSERT INTO app_settings (key, value, updated_at) VALUES ('language', '"en"', '{T}');
        INSERT INTO model_token_factors (model, factor, samples, updated_at)
        VALUES ('ollama/test-model', 1.25, 3, '{T}');
        COMMIT;
        """
    )
    await conn.close()


async def column(db: Database, sql: str) -> dict[object, object]:
    """First column → second column of a query's rows."""
    return {row[0]: row[1] for row in await db.fetchall(sql)}


async def test_previous_schema_with_data_migrates_to_spaces(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.db"
    await old_database(path)
    caplog.set_level(logging.INFO, logger="bot.store")
    db = await Database.open(path, local_space=LOCAL)
    try:
        assert await db.scalar("PRAGMA user_version") == SCHEMA_VERSION
        assert await column(db, "SELECT id, space_id FROM sessions") == {
            "thread-a": "guild:100",
            "thread-b": "guild:200",
            "dm-7": "dm:7",
            "dm-odd": LOCAL,
            "term": LOCAL,
            "api": LOCAL,
            "opener": "guild:100",
        }
        assert await column(db, "SELECT id, parent_channel_id FROM sessions") == {
            "thread-a": None,
            "thread-b": None,
            "dm-7": None,
            "dm-odd": None,
            "term": None,
            "api": None,
            "opener": 500,
        }, "a thread on a topic opener hangs off the opener's channel"
        assert await column(db, "SELECT id, space_id FROM messages") == {
            1: "guild:100",
            2: "guild:100",
            3: "guild:200",
            4: "dm:7",
            5: "dm:7",
            6: LOCAL,
            7: LOCAL,
            8: LOCAL,
        }
        assert await column(db, "SELECT id, space_id FROM memories") == {1: "guild:100", 2: "dm:7"}
        assert await column(db, "SELECT tag, space_id FROM message_tags") == {
            "tag-a": "guild:100",
            "tag-b": "guild:200",
            "tag-dm": "dm:7",
        }
        assert await column(db, "SELECT tag, space_id FROM memory_tags") == {
            "memo-a": "guild:100",
            "memo-dm": "dm:7",
        }
        assert await column(db, "SELECT id, space_id FROM knowledge_entries") == {
            1: "guild:100",
            2: "dm:7",
            3: LOCAL,
        }
        assert await db.scalar("SELECT COUNT(*) FROM knowledge_sources") == 2
        assert await column(db, "SELECT title, space_id FROM note_pages") == {
            "Only A": "guild:100",
            "A and B": LOCAL,
            "Unlinked": LOCAL,
            "Only B": "guild:200",
            "A twice": "guild:100",
        }
        assert await column(db, "SELECT title, position FROM note_pages") == {
            "Only A": 0,
            "A twice": 1,
            "A and B": 0,
            "Unlinked": 1,
            "Only B": 0,
        }, "positions restart in every space, in the old order"
        links = await db.fetchall(
            "SELECT session_id, page_id, space_id FROM session_note_pages "
            "ORDER BY session_id, page_id"
        )
        assert [tuple(row) for row in links] == [
            ("opener", 5, "guild:100"),
            ("term", 2, LOCAL),
            ("thread-a", 1, "guild:100"),
            ("thread-a", 5, "guild:100"),
            ("thread-b", 4, "guild:200"),
        ], "links that would cross spaces are dropped"
        assert await column(db, "SELECT id, space_id FROM attachments") == {
            "att-a": "guild:100",
            "att-dm": "dm:7",
        }
        assert await column(db, "SELECT channel_id, space_id FROM topic_channels") == {
            500: "guild:100",
            800: LOCAL,
        }
        assert await column(db, "SELECT id, space_id FROM topic_posts") == {
            1: "guild:100",
            2: LOCAL,
        }
        assert await column(db, "SELECT id, space_id FROM api_logs") == {
            1: "guild:100",
            2: None,
            3: None,
        }
        assert await column(db, "SELECT id, kind FROM spaces") == {
            "guild:100": "guild",
            "guild:200": "guild",
            "dm:7": "dm",
            LOCAL: "local",
        }
        assert await db.scalar("SELECT value FROM app_settings") == '"en"'
        assert await db.scalar("SELECT factor FROM model_token_factors") == 1.25
        assert list(await db.fetchall("PRAGMA foreign_key_check")) == []
        assert await db.scalar("PRAGMA foreign_keys") == 1
        # New rows continue the old id sequences.
        await db.execute(
            "INSERT INTO messages (space_id, session_id, role, content, created_at) "
            f"VALUES ('dm:7', 'dm-7', 'user', 'new', '{T}')"
        )
        assert await db.scalar("SELECT MAX(id) FROM messages") == 9
        with pytest.raises(sqlite3.IntegrityError):
            await db.execute(
                "INSERT INTO messages (session_id, role, content, created_at) "
                f"VALUES ('dm-7', 'user', 'no space', '{T}')"
            )
    finally:
        await db.close()
    logged = caplog.text
    assert "sessions assigned" in logged and "'guild:100': 2" in logged
    assert "note links dropped" in logged
    assert f" to {SCHEMA_VERSION} (" in logged and "database migrated from schema version" in logged


async def test_a_failed_migration_leaves_the_old_database(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    await old_database(path)
    conn = await aiosqlite.connect(path, isolation_level=None)
    with pytest.raises(Exception, match="space id"):
        await migrate(conn, MigrationContext(local_space="not a space"))
    assert await (await conn.execute("PRAGMA user_version")).fetchone() == (BEFORE_SPACES,)
    rows = await conn.execute_fetchall("SELECT COUNT(*) FROM sessions")
    assert next(iter(rows))[0] == 7
    await conn.close()


@pytest.mark.sqlite_only(reason="opens an old SQLite file (schema before spaces)")
async def test_opening_the_old_database_moves_knowledge_files_into_space_folders(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    settings = make_settings(local_space="home")
    await old_database(settings.db_path)
    web = settings.kb_dir / "web_search"
    web.mkdir(parents=True)
    for name in ("a", "d", "x", "stray"):
        (web / f"{name}.md").write_text(f"# {name}\n", "utf-8")
    (settings.kb_dir / "guide.md").write_text("# shared guide\n", "utf-8")
    async with open_services(settings, service_options) as services:
        paths = {
            row[0]: row[1]
            for row in await services.db.fetchall("SELECT id, md_path FROM knowledge_entries")
        }
    assert paths == {
        1: "web_search/guild_100/a.md",
        2: "web_search/dm_7/d.md",
        3: "web_search/local_home/x.md",
    }
    for rel in (*paths.values(), "web_search/local_home/stray.md", "guide.md"):
        assert (settings.kb_dir / rel).is_file(), rel
    assert sorted(path.name for path in web.iterdir()) == ["dm_7", "guild_100", "local_home"]
