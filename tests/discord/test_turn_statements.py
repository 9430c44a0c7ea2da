"""What a Discord turn asks of the database (the statements SQLite received, from its trace):
a new conversation reads no session it has just made or was handed, its writes go in one batch
each, and a reply to a topic opener or a thread that already existed is still looked up."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from bot.store.engine.database import Database
from tests.discord.conftest import World, WorldFactory
from tests.fakes.discord_models import FakeChannel, FakeMessage
from tests.fakes.llm_server import Text

pytestmark = pytest.mark.sqlite_only(reason="reads the statements SQLite received (its trace)")

PUBLIC_THREAD = 11


@dataclass
class Received:
    """The statements the writer and the reader connection ran, in order, one line each."""

    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)

    def reads_of(self, table: str) -> list[str]:
        """The reads that select from `table`."""
        return [sql for sql in self.reads if f"FROM {table} " in sql]


@contextmanager
def received(db: Database) -> Iterator[Received]:
    """Record what the database runs meanwhile (sqlite3's trace callback on both connections)."""
    seen = Received()
    links = ((db._writer, seen.writes), (db._reader, seen.reads))
    for link, into in links:
        assert link is not None
        link._conn.set_trace_callback(lambda sql, into=into: into.append(" ".join(sql.split())))
    try:
        yield seen
    finally:
        for link, _ in links:
            assert link is not None
            link._conn.set_trace_callback(None)


def _transactions(writes: list[str]) -> list[list[str]]:
    """The writes grouped by transaction, each statement cut to its first four words.

    The trace repeats a statement for each row of an executemany and for each trigger it
    fires (with trigger steps as `-- ` lines), so a repeat in a row counts once.
    """
    groups: list[list[str]] = []
    for sql in writes:
        if sql == "BEGIN IMMEDIATE":
            groups.append([])
        elif sql != "COMMIT" and not sql.startswith("-- "):
            words = " ".join(sql.split()[:4])
            if groups[-1][-1:] != [words]:
                groups[-1].append(words)
    return groups


async def _turn(w: World, text: str, answer: str, **options: object) -> FakeMessage:
    w.llm.script(Text(answer, chunks=1))
    sent = await w.server.inject_message(text, **options)  # type: ignore[arg-type]
    await w.wait_text(await w.wait_thread(sent), answer)
    await w.services.tasks.drain()  # the turn's tagging and summary check
    return sent


async def test_an_ordinary_turn_reads_no_session_and_writes_in_batches(
    world: WorldFactory,
) -> None:
    async with world() as w:
        await _turn(w, "warm up", "Warm.")
        with received(w.services.db) as seen:
            sent = await _turn(w, "What is Kyoto like?", "Lovely.")
        # The thread was made for this message: no session or opener to look for, and the
        # engine takes the session the front end made instead of reading it again.
        assert seen.reads_of("sessions") == []
        assert seen.reads_of("topic_posts") == []
        groups = _transactions(seen.writes)
        assert ["INSERT INTO spaces (id,", "INSERT INTO sessions (id,"] in groups
        message_writes = [g for g in groups if g and g[0].startswith("INSERT INTO messages")]
        assert (
            message_writes
            == [["INSERT INTO messages (space_id,", "UPDATE sessions SET updated_at"]] * 2
        )
        tagging = [g for g in groups if g and g[0].startswith("UPDATE messages SET tagged_at")]
        assert tagging == [
            [
                "UPDATE messages SET tagged_at",
                "DELETE FROM message_tags WHERE",
                "INSERT INTO message_tags (space_id,",
            ]
        ]
        # What it stored is as before: the question and the answer, in the thread's session.
        session = await w.services.repos.sessions.open_for_channel(w.space, sent.id)
        assert session is not None and session.parent_channel_id == w.server.channel_id
        stored = await w.services.repos.messages.all_for_session(w.space, session.id)
        assert [(m.role, m.discord_message_id) for m in stored] == [
            ("user", sent.id),
            ("assistant", None),
        ]
        assert len(await w.services.repos.tags.tags_for_message(w.space, stored[0].id)) > 0


async def test_a_new_conversation_replying_to_a_topic_opener_continues_its_topic(
    world: WorldFactory,
) -> None:
    async with world() as w:
        opener = await w.server.inject_message(
            "Anyone tried the new ramen place?", author=w.server.bot_user, mention_bot=False
        )
        await w.services.repos.topics.add_post(
            w.space,
            w.server.channel_id,
            kind="idle",
            topic="ramen",
            words=["ramen"],
            content=opener.content,
            discord_message_id=opener.id,
            posted_at="2026-01-01T00:00:00+00:00",
        )
        with received(w.services.db) as seen:
            reply = await _turn(
                w, "Yes, the miso one!", "Glad you liked it.", reply_to=opener, mention_bot=False
            )
        assert len(seen.reads_of("topic_posts")) == 1, "the opener replied to, not the thread"
        assert seen.reads_of("sessions") == []
        session = await w.services.repos.sessions.open_for_channel(w.space, reply.id)
        assert session is not None and session.topic == "ramen"
        stored = await w.services.repos.messages.all_for_session(w.space, session.id)
        assert [(m.role, m.content) for m in stored][:1] == [("assistant", opener.content)]
        sent = [(m["role"], m["content"]) for m in w.llm.chat_requests[-1].messages]
        assert ("assistant", opener.content) in sent, "the model knows the topic"


async def test_a_thread_that_already_existed_keeps_its_session(world: WorldFactory) -> None:
    async with world() as w:
        # As after a first try that opened the thread and bound its session, then stopped: the
        # message comes again and opening its thread answers 160004 (already exists).
        server, state = w.server, w.server.state
        message = FakeMessage(
            id=state.ids.next(),
            channel_id=server.channel_id,
            guild_id=server.guild_id,
            author=state.user,
            content=f"{state.bot_user.mention} are you there?",
        )
        state.add_message(message)
        state.channels[message.id] = FakeChannel(
            id=message.id,
            type=PUBLIC_THREAD,
            name="are you there?",
            guild_id=server.guild_id,
            parent_id=server.channel_id,
            owner_id=state.bot_user.id,
        )
        message.thread_id = message.id
        earlier = await w.services.conversations.for_channel(
            w.space,
            message.id,
            title="are you there?",
            guild_id=server.guild_id,
            parent_channel_id=server.channel_id,
        )
        w.llm.script(Text("Here.", chunks=1))
        server.gateway.dispatch_message("MESSAGE_CREATE", message)
        await w.wait_text(message.id, "Here.")
        opened = server.calls_to("POST", rf"^/channels/{server.channel_id}/messages/\d+/threads$")
        assert [call.status for call in opened] == [400]
        current = await w.services.conversations.current(w.space, message.id)
        assert current is not None and current.id == earlier.id
        stored = await w.services.repos.messages.all_for_session(w.space, earlier.id)
        assert [(m.role, m.discord_message_id) for m in stored] == [
            ("user", message.id),
            ("assistant", None),
        ]
        sessions = await w.services.repos.sessions.list(w.space)
        assert [s.id for s in sessions] == [earlier.id]
