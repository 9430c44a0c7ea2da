"""Forty messages sent at once into one admin-chat conversation (issue 31): every queued turn
reaches the model with its own message, however often the summariser runs meanwhile."""

from __future__ import annotations

import asyncio

from tests.admin_api.conftest import Admin, StartAdmin, sse_events
from tests.conftest import LOCAL
from tests.queued_turns import (
    ANSWER_PREFIX,
    burst_texts,
    check_answered_once,
    check_every_turn_had_its_message,
    check_summarised_answered_only,
    model_reply,
)

BURST = 40
THRESHOLD = 6


async def _say(admin: Admin, text: str, session_id: str | None) -> list[dict[str, object]]:
    body: dict[str, object] = {"message": text}
    if session_id is not None:
        body["session_id"] = session_id
    reply = await admin.post("/api/chat/stream", body)
    assert reply.status == 200, reply.text
    return sse_events(reply.text)


async def test_forty_queued_turns_each_answer_their_own_message(
    start_admin: StartAdmin, database_url: str
) -> None:
    admin = await start_admin(database_url=database_url, memory_summarize_threshold=THRESHOLD)
    admin.llm.default_reply = model_reply
    opening = await _say(admin, "hello", None)
    session_id = str(opening[0]["value"])
    texts = burst_texts(BURST)

    streams = await asyncio.gather(*(_say(admin, text, session_id) for text in texts))

    await admin.services.tasks.drain()
    check_every_turn_had_its_message(admin.llm.chat_requests, ["hello", *texts])
    for text, events in zip(texts, streams, strict=True):
        assert [e["type"] for e in events][-1] == "done", events[-1]
        chunks = "".join(str(e["value"]) for e in events if e["type"] == "chunk")
        assert chunks == ANSWER_PREFIX + text
    repos = admin.services.repos
    stored = await repos.messages.all_for_session(LOCAL, session_id)
    check_answered_once(stored, texts, str)
    memories = await repos.memories.live(LOCAL, session_id)
    check_summarised_answered_only(stored, memories, THRESHOLD)
