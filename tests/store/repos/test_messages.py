"""Live messages of a conversation with queued turns, on both engines (issue 31): reads bounded
by a turn's own message, in conversation order (an answer sits with its question)."""

from __future__ import annotations

from bot.store.engine.database import Database
from bot.store.repos.messages import MessageRepository, StoredMessage
from bot.store.repos.sessions import SessionRepository

A, B = "guild:1", "guild:2"


async def _burst(db: Database) -> tuple[MessageRepository, str, list[StoredMessage]]:
    """Five questions stored at once, then the answers of the first three (as queued turns
    leave them): q0 q1 q2 q3 q4 a0 a1 a2 by id."""
    sessions, messages = SessionRepository(db), MessageRepository(db)
    session = await sessions.create(A, title="t")
    questions = [await messages.add(A, session.id, "user", f"q{n}") for n in range(5)]
    for n in range(3):
        await messages.add(A, session.id, "assistant", f"a{n}", reply_to=questions[n].id)
    return messages, session.id, questions


def _texts(found: list[StoredMessage]) -> list[str]:
    return [message.content for message in found]


async def test_oldest_live_stops_before_a_pending_message(db: Database) -> None:
    messages, session_id, questions = await _burst(db)
    assert _texts(await messages.oldest_live(A, session_id, 4)) == ["q0", "a0", "q1", "a1"]
    pending = questions[3].id
    assert _texts(await messages.oldest_live(A, session_id, 10, before=pending)) == [
        "q0",
        "a0",
        "q1",
        "a1",
        "q2",
        "a2",
    ]
    assert _texts(await messages.oldest_live(A, session_id, 10, before=questions[0].id)) == []
    assert await messages.oldest_live(B, session_id, 10) == [], "another space sees nothing"


async def test_recent_live_up_to_a_turn_keeps_its_message(db: Database) -> None:
    messages, session_id, questions = await _burst(db)
    # q3's turn: the answers stored after q3 are newer by id, yet q3 is its newest message.
    mine = await messages.recent_live(A, session_id, 3, up_to=questions[3].id)
    assert _texts(mine) == ["q2", "a2", "q3"]
    early = await messages.recent_live(A, session_id, 100, up_to=questions[1].id)
    assert _texts(early) == ["q0", "a0", "q1", "a1"]
    every = await messages.recent_live(A, session_id, 100)
    assert _texts(every) == ["q0", "a0", "q1", "a1", "q2", "a2", "q3", "q4"]
    assert await messages.recent_live(B, session_id, 100, up_to=questions[3].id) == []


async def test_first_unanswered_is_the_oldest_question_after_the_newest_answer(
    db: Database,
) -> None:
    messages, session_id, questions = await _burst(db)
    assert await messages.first_unanswered(A, session_id) == questions[3].id
    await messages.add(A, session_id, "assistant", "a4", reply_to=questions[4].id)
    assert await messages.first_unanswered(A, session_id) is None, "q3 failed: q4 was answered"
    later = await messages.add(A, session_id, "user", "q5")
    assert await messages.first_unanswered(A, session_id) == later.id
    assert await messages.first_unanswered(B, session_id) is None
    sessions = SessionRepository(db)
    fresh = await sessions.create(A, title="new")
    first = await messages.add(A, fresh.id, "user", "hello")
    assert await messages.first_unanswered(A, fresh.id) == first.id, "nothing answered yet"
