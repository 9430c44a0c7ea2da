"""GET /api/backup: a fresh, consistent copy of the database as a download."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from bot.store.spaces import local_space
from tests.admin_api.conftest import TOKEN, Admin, StartAdmin

SQLITE_HEADER = b"SQLite format 3\x00"
ONLINE_BACKUP = "SQLite's online backup of the DB_PATH file; PostgreSQL is pg_dump's (below)"


@pytest.mark.sqlite_only(reason=ONLINE_BACKUP)
async def test_backup_download_is_a_consistent_copy_and_needs_authentication(
    admin: Admin, tmp_path: Path
) -> None:
    session = await admin.services.repos.sessions.create(local_space(), title="in the backup")
    await admin.services.repos.messages.add(local_space(), session.id, "user", "hello")

    anonymous = await admin.get("/api/backup", token=None)
    assert anonymous.status == 401

    async with admin.http.get(
        admin.url + "/api/backup", headers={"Authorization": f"Bearer {TOKEN}"}
    ) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "application/vnd.sqlite3"
        disposition = response.headers["Content-Disposition"]
        assert re.fullmatch(r'attachment; filename="playchat-\d{8}-\d{6}Z\.db"', disposition)
        assert response.headers["Cache-Control"] == "no-store"
        body = await response.read()
        assert int(response.headers["Content-Length"]) == len(body)
    assert body.startswith(SQLITE_HEADER)

    copy = tmp_path / "downloaded.db"
    copy.write_bytes(body)
    with closing(sqlite3.connect(copy)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete", "stands alone"
        titles = [row[0] for row in conn.execute("SELECT title FROM sessions")]
        contents = [row[0] for row in conn.execute("SELECT content FROM messages")]
    assert titles == ["in the backup"] and contents == ["hello"]

    db_dir = admin.services.db.path.parent
    assert not [p.name for p in db_dir.iterdir() if p.name.startswith(".")], "scratch removed"


async def test_the_backup_route_is_documented_as_a_file(admin: Admin) -> None:
    spec = (await admin.get("/api/openapi.json")).json
    operation = spec["paths"]["/api/backup"]["get"]
    assert operation["operationId"] == "download_backup"
    assert "security" not in operation, "not public"
    assert list(operation["responses"]["200"]["content"]) == ["application/vnd.sqlite3"]


@pytest.mark.sqlite_only(reason=ONLINE_BACKUP)
async def test_a_backup_that_cannot_be_made_is_a_503_naming_the_cause(admin: Admin) -> None:
    path = admin.services.db.path
    # The database file vanished under the running bot (e.g. a mistaken cleanup).
    moved = path.with_name("moved.db")
    path.rename(moved)
    try:
        reply = await admin.get("/api/backup")
    finally:
        moved.rename(path)
    assert reply.status == 503
    assert reply.json["error"] == "backup_failed"
    assert str(path) in reply.json["detail"]


async def test_on_postgresql_the_backup_is_a_503_naming_pg_dump(
    start_admin: StartAdmin, postgres_db: str
) -> None:
    admin = await start_admin(database_url=postgres_db)
    reply = await admin.get("/api/backup")
    assert reply.status == 503
    assert reply.json["error"] == "backup_failed" and "pg_dump" in reply.json["detail"]
    assert (await admin.get("/api/status")).json["last_backup"] is None
