"""Text the two engines store differently: PostgreSQL's text cannot hold NUL, SQLite's can."""

from __future__ import annotations

from bot.store.engine.database import Database
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository

SPACE = "local:local"


async def test_a_nul_in_text_is_stored_not_refused(db: Database) -> None:
    session = await SessionRepository(db).create(SPACE, title="a\x00title")
    messages = MessageRepository(db)
    added = await messages.add(SPACE, session.id, "user", "before\x00after")
    stored = await messages.get(SPACE, added.id)
    assert stored is not None
    nul = "\x00" if db.dialect == "sqlite" else "\ufffd"  # U+FFFD, the replacement character
    assert stored.content == f"before{nul}after"
    found = await SessionRepository(db).get(SPACE, session.id)
    assert found is not None and found.title == f"a{nul}title"
