"""The admin chat refuses a message the store cannot keep: an error status with the reason,
before any stream starts, and the model is never asked."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from tests.admin_api.conftest import Admin
from tests.fakes.llm_server import Text

REFUSE_MESSAGES = (
    "CREATE TRIGGER refuse_messages BEFORE INSERT ON messages "
    "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
)


async def counts(admin: Admin) -> tuple[int, int]:
    db = admin.services.db
    return (
        int(await db.scalar("SELECT COUNT(*) FROM messages")),
        int(await db.scalar("SELECT COUNT(*) FROM sessions")),
    )


@pytest.mark.sqlite_only(reason="a SQLite trigger makes the store refuse the message")
async def test_a_refused_message_is_a_503_naming_the_reason(admin: Admin) -> None:
    await admin.services.db.execute(REFUSE_MESSAGES)
    before = await counts(admin)
    for body in ({"message": "hi"}, {"message": "hi", "space_id": "guild:42"}):
        reply = await admin.post("/api/chat/stream", body)
        assert reply.status == 503, reply.text
        assert reply.headers["Content-Type"].startswith("application/json")
        assert reply.json["error"] == "not_stored"
        assert "could not be saved (the disk is full)" in reply.json["detail"]
        assert "is saved" not in reply.text
    assert admin.llm.chat_requests == []
    assert await counts(admin) == before, "no message and no empty session is left"


@pytest.mark.sqlite_only(reason="another connection holds SQLite's write lock")
async def test_a_locked_database_refuses_the_turn_as_busy(admin: Admin) -> None:
    path = admin.services.settings().db_path
    with closing(sqlite3.connect(path, timeout=0)) as holder:
        holder.execute("BEGIN IMMEDIATE")  # every other writer waits, then gives up
        reply = await admin.post("/api/chat/stream", {"message": "hi"})
        holder.rollback()
    assert reply.status == 503 and "(the database is busy)" in reply.json["detail"], reply.text
    assert admin.llm.chat_requests == []
    assert await counts(admin) == (0, 0)


async def test_a_stored_message_streams_as_before(admin: Admin) -> None:
    """The control: with a store that keeps it, the same request streams the answer."""
    admin.llm.script(Text("hello", chunks=1))
    reply = await admin.post("/api/chat/stream", {"message": "hi"})
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/event-stream")
    assert '"type": "done"' in reply.text
    assert (await counts(admin))[0] == 2
