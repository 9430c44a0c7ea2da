"""Session import at the store level: ids renumbered, references re-linked, copies detached."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.errors import ConflictError, NotFoundError
from bot.store.attachments import AttachmentRepository
from bot.store.db import Database
from bot.store.memories import MemoryRepository
from bot.store.messages import MessageRepository
from bot.store.sessions import SessionRepository
from bot.store.transfer import SessionExport, SessionTransfer

T = "2026-01-02T03:04:05+00:00"
A = "guild:222"
B = "guild:333"


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A fresh SQLite database."""
    database = await Database.open(tmp_path / "p.db")
    try:
        yield database
    finally:
        await database.close()


def transfer_over(db: Database) -> SessionTransfer:
    """A SessionTransfer over `db`."""
    return SessionTransfer(
        db,
        SessionRepository(db),
        MessageRepository(db),
        MemoryRepository(db),
        AttachmentRepository(db),
    )


def export_with_odd_ids() -> SessionExport:
    """Ids far from a fresh database's, a reply stored before its question, a condensed
    summary, and a message that names its attachment."""
    return SessionExport.model_validate(
        {
            "exported_at": T,
            "session": {
                "id": "trip",
                "discord_channel_id": 111,
                "discord_guild_id": 222,
                "created_at": T,
                "updated_at": T,
            },
            "messages": [
                {"id": 50, "role": "assistant", "content": "late answer", "reply_to": 70,
                 "archived_at": T, "memory_id": 8, "created_at": T},
                {"id": 70, "role": "user", "content": "see attachment:att1",
                 "discord_message_id": 9001, "created_at": T},
                {"id": 90, "role": "assistant", "content": "answer", "reply_to": 70,
                 "created_at": T},
            ],
            "memories": [
                {"id": 8, "summary": "old", "condensed_into": 9, "created_at": T},
                {"id": 9, "summary": "older, condensed", "level": 1, "created_at": T},
            ],
            "attachments": [
                {"id": "att1", "filename": "a.bin", "size": 3, "created_at": T,
                 "data_base64": base64.b64encode(b"abc").decode()},
            ],
        }
    )  # fmt: skip


async def test_import_relinks_replies_summaries_and_keeps_ids_where_free(db: Database) -> None:
    transfer = transfer_over(db)
    session_id = await transfer.import_session(A, export_with_odd_ids())
    assert session_id == "trip"

    exported = await transfer.export_session(A, session_id)
    assert exported.session.space_id == A
    by_content = {m.content: m for m in exported.messages}
    question = by_content["see attachment:att1"]
    assert by_content["late answer"].reply_to == question.id, "a reply before its question"
    assert by_content["answer"].reply_to == question.id
    assert question.discord_message_id == 9001
    memories = {m.summary: m for m in exported.memories}
    assert memories["old"].condensed_into == memories["older, condensed"].id
    assert by_content["late answer"].memory_id == memories["old"].id
    assert exported.session.discord_channel_id == 111
    assert [(a.id, a.data()) for a in exported.attachments] == [("att1", b"abc")]

    with pytest.raises(ConflictError):
        await transfer.import_session(A, export_with_odd_ids())
    with pytest.raises(ConflictError, match="already exists"):
        await transfer.import_session(B, export_with_odd_ids())
    with pytest.raises(NotFoundError):
        await transfer.export_session(B, session_id)


async def test_import_as_new_gets_fresh_ids_and_leaves_discord(db: Database) -> None:
    transfer = transfer_over(db)
    original = await transfer.import_session(A, export_with_odd_ids())
    copy_id = await transfer.import_session(B, export_with_odd_ids(), as_new=True)
    assert copy_id != original

    copy = await transfer.export_session(B, copy_id)
    assert copy.session.space_id == B, "imported into the space the caller named"
    (attachment,) = copy.attachments
    assert attachment.id != "att1" and attachment.data() == b"abc"
    contents = sorted(m.content for m in copy.messages)
    assert contents == ["answer", "late answer", f"see attachment:{attachment.id}"]
    assert all(m.discord_message_id is None for m in copy.messages)
    assert copy.session.discord_channel_id is None and copy.session.discord_guild_id is None
    late = next(m for m in copy.messages if m.content == "late answer")
    question = next(m for m in copy.messages if m.content.startswith("see"))
    assert late.reply_to == question.id
