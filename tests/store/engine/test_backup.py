"""Backups while the bot runs, the snapshot before a migration, and restoring a backup."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from bot.chat.engine import TurnRequest
from bot.errors import DatabaseVersionError
from bot.store.engine.backup import BackupError, backup_database, backup_to, snapshot_path
from bot.store.engine.database import Database
from bot.store.engine.migrate import migrate
from bot.store.schema.migrations import SCHEMA_VERSION
from bot.store.spaces import local_space
from bot.turn.events import ChunkEvent, Event, SessionEvent
from tests.bot_process import bot_env, run_python_m_bot
from tests.conftest import FAST_RETRY, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Hang, Text

Dump = dict[str, list[tuple[Any, ...]]]

SPACE = local_space()


def dump(path: Path) -> Dump:
    """Every row of every table, in rowid order (key order for tables without a rowid, such
    as the full-text index's shadow tables), read through a plain connection."""
    with closing(sqlite3.connect(path)) as conn:
        tables = [
            (row[0], "WITHOUT ROWID" in (row[1] or "").upper())
            for row in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return {
            table: conn.execute(
                f'SELECT * FROM "{table}" ORDER BY {"1, 2" if without_rowid else "rowid"}'
            ).fetchall()
            for table, without_rowid in tables
            if not table.startswith("sqlite_stat")
        }


def integrity(path: Path) -> str:
    with closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


def user_version(path: Path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


@pytest.mark.sqlite_only(reason="SQLite online backup and restore of the DB_PATH file")
async def test_python_m_bot_backup_while_a_reply_streams_copies_what_was_committed(
    make_settings: SettingsFactory, llm: FakeLLMServer, tmp_path: Path
) -> None:
    from bot.services import ServiceOptions, open_services

    settings = make_settings()
    options = ServiceOptions(retry=FAST_RETRY, builtin_tools=False, warm_start=False)
    llm.script(Text("An earlier answer."), Hang(after_chunks=2, text="half of a long answer"))
    async with open_services(settings, options) as services:
        first = [
            e
            async for e in services.engine.run_turn(TurnRequest("earlier question", space_id=SPACE))
        ]
        assert isinstance(first[0], SessionEvent)
        session_id = first[0].session_id
        await services.tasks.drain()  # tags and words of the first turn are written
        streaming = asyncio.Event()
        events: list[Event] = []

        async def turn() -> None:
            async for event in services.engine.run_turn(
                TurnRequest("go on", session_id, space_id=SPACE)
            ):
                events.append(event)
                if isinstance(event, ChunkEvent):
                    streaming.set()

        task = asyncio.create_task(turn())
        await asyncio.wait_for(streaming.wait(), 15)

        before = dump(settings.db_path)
        (tmp_path / "backups").mkdir()
        code, out, err = await run_python_m_bot(
            ["backup", str(tmp_path / "backups")], bot_env(settings.db_path), tmp_path
        )
        after = dump(settings.db_path)
        assert code == 0, err
        copy = Path(out.strip())
        assert copy.parent == tmp_path / "backups" and copy.name.startswith("playchat-")
        assert task.done() is False, "the reply was still streaming during the backup"

        await llm.close()  # the stalled reply breaks off; the turn ends with an error
        await asyncio.wait_for(task, 15)

    assert before == after, "nothing was committed while the backup ran"
    assert integrity(copy) == "ok"
    assert dump(copy) == before
    messages = before["messages"]
    assert [m[4] for m in messages] == ["earlier question", "An earlier answer.", "go on"]
    # The streamed call was logged when it ended, after the copy was made.
    assert len(dump(settings.db_path)["api_logs"]) == len(before["api_logs"]) + 1
    assert not list(copy.parent.glob("*-wal")), "the copy stands alone"


async def test_backup_under_continuous_writes_is_a_consistent_prefix(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "live.db")
    # A new file holds no rows (the services create the local space's row at start-up).
    await db.execute(
        "INSERT INTO spaces (id, kind, created_at) VALUES (?, 'local', 'now')", (SPACE,)
    )
    await db.execute(
        "INSERT INTO sessions (id, space_id, created_at, updated_at) VALUES ('s', ?, 'now', 'now')",
        (SPACE,),
    )
    stop = asyncio.Event()

    async def writer() -> int:
        written = 0
        while not stop.is_set():
            async with db.transaction() as conn:
                # Two rows per transaction: a torn copy would show an odd count.
                for _ in range(2):
                    await conn.execute(
                        "INSERT INTO messages (space_id, session_id, role, content, created_at) "
                        "VALUES (?, 's', 'user', ?, 'now')",
                        (SPACE, "x" * 2000),
                    )
            written += 2
            await asyncio.sleep(0)
        return written

    task = asyncio.create_task(writer())
    while await db.scalar("SELECT COUNT(*) FROM messages") < 400:
        await asyncio.sleep(0.01)
    copies = [await backup_to(db.path, tmp_path / f"copy{i}.db") for i in range(3)]
    stop.set()
    await task
    live = dump(db.path)["messages"]
    await db.close()
    counts = []
    for copy in copies:
        assert integrity(copy) == "ok"
        rows = dump(copy)["messages"]
        assert rows == live[: len(rows)], "exactly the rows committed when the copy began"
        assert len(rows) % 2 == 0 and len(rows) >= 400
        counts.append(len(rows))
    assert counts == sorted(counts) and len(live) > counts[0], "the bot kept writing"


def test_backup_refuses_to_overwrite_and_names_a_missing_database(tmp_path: Path) -> None:
    with pytest.raises(BackupError, match="no database at"):
        backup_database(tmp_path / "none.db", tmp_path / "copy.db")
    assert not (tmp_path / "none.db").exists(), "no empty database was created"
    source = tmp_path / "p.db"
    with closing(sqlite3.connect(source)) as conn:
        conn.execute("CREATE TABLE t (x)")
    (tmp_path / "copy.db").write_text("keep me")
    with pytest.raises(BackupError, match="exists already"):
        backup_database(source, tmp_path / "copy.db")
    assert (tmp_path / "copy.db").read_text() == "keep me"
    with pytest.raises(BackupError, match="writable"):
        backup_database(source, tmp_path / "no-such-folder" / "copy.db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.db", "p.db"], "no partial file"
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n" * 100)
    with pytest.raises(BackupError, match=r"Cannot read the database .*notes\.txt"):
        backup_database(notes, tmp_path / "copy2.db")
    assert not (tmp_path / "copy2.db").exists()


async def _database_at(path: Path, version: int) -> None:
    """A database migrated only up to `version`, as an older PlayChat left it, with a row."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        await migrate(conn, target=version)
        await conn.execute(
            "INSERT INTO app_settings (key, value, updated_at) VALUES ('old', 'kept', 'now')"
        )
    finally:
        await conn.close()


@pytest.mark.skipif(SCHEMA_VERSION < 2, reason="needs a migration after the first")
async def test_an_upgrade_snapshots_the_database_first(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    await _database_at(path, SCHEMA_VERSION - 1)
    before = dump(path)
    db = await Database.open(path)
    assert await db.scalar("PRAGMA user_version") == SCHEMA_VERSION
    await db.close()
    snapshot = snapshot_path(path, SCHEMA_VERSION)
    assert snapshot.name == f"p.db.before-v{SCHEMA_VERSION}.bak"
    assert user_version(snapshot) == SCHEMA_VERSION - 1
    assert integrity(snapshot) == "ok" and dump(snapshot) == before

    # Opening the upgraded database again takes no new snapshot.
    snapshot.unlink()
    db = await Database.open(path)
    await db.close()
    assert not snapshot.exists()


async def test_new_and_newer_databases_get_no_snapshot(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "new.db")
    await db.close()
    newer = tmp_path / "newer.db"
    with closing(sqlite3.connect(newer)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(DatabaseVersionError):
        await Database.open(newer)
    assert sorted(p.name for p in tmp_path.iterdir() if ".bak" in p.name) == []


@pytest.mark.sqlite_only(reason="SQLite online backup and restore of the DB_PATH file")
async def test_a_restored_backup_is_what_the_bot_starts_on(
    make_settings: SettingsFactory, llm: FakeLLMServer, tmp_path: Path
) -> None:
    from bot.services import ServiceOptions, open_services

    settings = make_settings()
    options = ServiceOptions(retry=FAST_RETRY, builtin_tools=False)
    async with open_services(settings, options) as services:
        kept = await services.repos.sessions.create(SPACE, title="before the backup")
        await services.repos.messages.add(SPACE, kept.id, "user", "remember me")
        copy = await backup_to(settings.db_path, tmp_path / "backup.db")
        lost = await services.repos.sessions.create(SPACE, title="after the backup")

    # Restore as the README says: bot stopped, stale -wal/-shm removed, the copy put in place.
    for leftover in (Path(f"{settings.db_path}-wal"), Path(f"{settings.db_path}-shm")):
        leftover.unlink(missing_ok=True)
    shutil.copyfile(copy, settings.db_path)

    llm.script(Text("Back again."))
    env = bot_env(settings.db_path, LLM_API_BASE=llm.url, LLM_MODEL="ollama/test-model")
    code, out, err = await run_python_m_bot(["chat"], env, tmp_path, b"hello\n")
    assert code == 0, err
    assert out.strip() == "Back again."

    db = await Database.open(settings.db_path)
    titles = [row["title"] for row in await db.fetchall("SELECT title FROM sessions")]
    contents = [row["content"] for row in await db.fetchall("SELECT content FROM messages")]
    await db.close()
    assert "before the backup" in titles and lost.title not in titles
    assert contents[:1] == ["remember me"] and "Back again." in contents
