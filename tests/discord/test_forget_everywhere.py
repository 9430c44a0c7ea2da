"""/memory me forget through the real discord.py client takes the fact out of everything that
still showed it: the message it was taken from and the bot's answer to it (history, recall,
the related-memories layer, FTS), the bot's answer to another member quoting it, the name of
the thread the message opened (in the store and, renamed by the bot, in Discord) and the
bot's own Discord messages; a thread an older version named after a request to remember is
renamed too. Asserted on what the loopback LLM and the loopback Discord received."""

from __future__ import annotations

from typing import Any

import pytest

from bot.memory.member_memory import FORGOTTEN_PLACEHOLDER
from tests.discord.conftest import World, WorldFactory
from tests.discord.test_member_memory import _ask, _sent
from tests.fakes.discord_models import FakeUser
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls
from tests.fakes.postgres import TempPostgres

EMU = "Zorblax"
FACT = f"Their emu is called {EMU}"
SAID = f"My emu {EMU} likes grapes"
ABOUT = "Tell me about the emu that likes grapes"


def _name(user: FakeUser) -> str:
    return str(user.global_name or user.username)


def _tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m["role"] == "tool"]


async def _forget(w: World, user: FakeUser, channel_id: int, which: str) -> str:
    asked = await w.server.inject_interaction(
        "memory me forget", {"which": which}, user=user, channel_id=channel_id
    )
    return str((await w.server.wait_for_reply(asked)).content)


async def left_in_store(w: World, text: str) -> list[str]:
    """The tables.columns of the space that still hold `text` (case ignored), FTS included."""
    folded = text.casefold()
    found = []
    checks = {
        "messages.content": "SELECT content AS v FROM messages WHERE space_id = ?",
        "sessions.title": "SELECT title AS v FROM sessions WHERE space_id = ?",
        "member_facts.fact": "SELECT fact AS v FROM member_facts WHERE space_id = ?",
        "recall_terms.terms": "SELECT terms AS v FROM recall_terms WHERE space_id = ?",
        "memories.summary": "SELECT summary AS v FROM memories WHERE space_id = ?",
        "tool_calls.arguments_json": "SELECT arguments_json AS v FROM tool_calls "
        "WHERE space_id = ?",
        "api_logs.request_json": "SELECT request_json AS v FROM api_logs "
        "WHERE space_id = ? OR space_id IS NULL",
    }
    for name, sql in checks.items():
        rows = await w.services.db.fetchall(sql, (w.space,))
        if any(folded in str(row["v"] or "").casefold() for row in rows):
            found.append(name)
    if w.services.db.dialect == "sqlite":
        rows = await w.services.db.fetchall(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (f'"{text}"',)
        )
        if rows:
            found.append("messages_fts")
    return found


async def on_disk(w: World, text: str, request: pytest.FixtureRequest) -> list[str]:
    """The database files holding `text`'s UTF-8 bytes (as written or case-folded) while the
    bot keeps the database open: SQLite's file and WAL; PostgreSQL's files of the schema's
    tables, TOAST tables and indexes after `VACUUM FULL` and a checkpoint (the server's own
    WAL keeps the text until its segments are recycled: README)."""
    await w.services.tasks.drain()  # the scrub after the erase runs in the background
    needles = {text.encode(), text.casefold().encode()}
    path = w.services.db.path
    if path is not None:
        files = [path, path.with_name(path.name + "-wal")]
    else:
        server: TempPostgres = request.getfixturevalue("postgres_server")
        database = str(await w.services.db.scalar("SELECT current_database()"))
        # What README tells an owner to run: the bot's own plain VACUUM prunes the dead rows,
        # but their bytes may stay in the pages' free space until the table is rewritten.
        server.psql("VACUUM FULL", database)
        server.psql("CHECKPOINT", database)
        listed = server.psql(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c JOIN pg_namespace n "
            "ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 't', 'i') "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema')",
            database,
        )
        files = [server.data_dir / line.strip() for line in listed.splitlines() if line.strip()]
    found = []
    for file in files:
        data = file.read_bytes() if file.exists() else b""
        if any(needle in data for needle in needles):
            found.append(file.name)
    return found


def _renames(w: World, thread: int) -> list[Any]:
    return [c.json for c in w.server.calls_to("PATCH", rf"^/channels/{thread}$")]


async def test_forgetting_a_fact_blanks_what_it_was_said_in(
    world: WorldFactory, request: pytest.FixtureRequest
) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        lovely = Text(f"{EMU} is a lovely name for an emu!", chunks=1)
        w.llm.script(ToolCalls([("remember", {"fact": FACT})]), lovely)
        opened, _ = await _ask(w, SAID, lovely, author=x)
        assert w.server.channel(opened).name == SAID
        [fact] = await w.services.members.list(w.space, str(x.id))
        # The bot tells another member the (unshared) fact, quoting it.
        told = Text(f"I heard: {FACT.lower()}.", chunks=1)
        w.llm.script(told)
        other, _ = await _ask(w, "What is the other member's emu called?", told, author=y)
        # Before: another member's turn brings the message in through the related layer.
        _, before = await _ask(w, ABOUT, author=y)
        assert EMU in _sent(before), "the related layer found the message"
        assert await left_in_store(w, EMU)
        assert await on_disk(w, EMU, request)

        reply = await _forget(w, x, opened, str(fact.id))

        assert f"Forgot fact #{fact.id}" in reply and "your own messages stay" in reply
        assert await left_in_store(w, EMU) == []
        assert await w.services.members.list(w.space, str(x.id)) == []
        neutral = f"Chat with {_name(x)}"
        session = await w.services.repos.sessions.open_for_channel(w.space, opened)
        assert session is not None and session.title == neutral
        # Discord: the bot renamed its thread and edited its own messages quoting the fact.
        await w.server.wait_for(lambda: w.server.channel(opened).name == neutral)
        assert {"name": neutral} in _renames(w, opened)
        for thread in (opened, other):
            await w.server.wait_for(
                lambda t=thread: not [m for m in w.bot_messages(t) if EMU in m.content]
            )
            edits = [c.json.get("content") for c in w.patches(thread)]
            assert FORGOTTEN_PLACEHOLDER in edits
        # The member's own message is not the bot's to edit: it stays in Discord.
        assert [m for m in w.server.messages_in(w.server.channel_id) if SAID in m.content]
        assert await on_disk(w, EMU, request) == []

        # The next requests: the same question, a recall, the member's own thread.
        _, after = await _ask(w, ABOUT, author=y)
        assert EMU not in _sent(after)
        nothing = Text("No emu found.", chunks=1)
        w.llm.script(ToolCalls([("recall", {"query": "emu grapes"})]), nothing)
        _, recalled = await _ask(w, "Did anyone mention an emu?", nothing, author=y)
        [result] = _tool_results(recalled)
        assert EMU not in result and SAID not in result
        _, own = await _ask(w, "What did I tell you?", author=x, thread_id=opened)
        assert EMU not in _sent(own) and FORGOTTEN_PLACEHOLDER in _sent(own)


async def test_a_thread_named_by_an_older_version_after_a_request_is_renamed(
    world: WorldFactory,
) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        asked = f"remember that my emu is called {EMU}"
        opened, _ = await _ask(w, asked, author=x)
        await _ask(w, "I also keep chickens in the garden", author=x, thread_id=opened)
        # As a version before the name check left it: the thread and the conversation named
        # after the request, the fact without the message it came from.
        session = await w.services.repos.sessions.open_for_channel(w.space, opened)
        assert session is not None
        await w.services.db.execute(
            "UPDATE sessions SET title = ? WHERE space_id = ? AND id = ?",
            (asked, w.space, session.id),
        )
        await w.services.db.execute(
            "UPDATE member_facts SET message_id = NULL WHERE space_id = ?", (w.space,)
        )
        w.server.channel(opened).name = asked
        # Another member's recall finds X's other message of that thread: the unshared fact
        # shows through nothing, not even the thread's name.
        nothing = Text("Chickens, yes.", chunks=1)
        w.llm.script(ToolCalls([("recall", {"query": "chickens garden"})]), nothing)
        _, recalled = await _ask(w, "Who keeps chickens?", nothing, author=y)
        [result] = _tool_results(recalled)
        assert "chickens in the garden" in result and EMU not in result
        [fact] = await w.services.members.list(w.space, str(x.id))

        assert "Forgot 1 facts" in await _forget(w, x, opened, "all")

        neutral = f"Chat with {_name(x)}"
        session = await w.services.repos.sessions.open_for_channel(w.space, opened)
        assert session is not None and session.title == neutral
        await w.server.wait_for(lambda: w.server.channel(opened).name == neutral)
        assert {"name": neutral} in _renames(w, opened)
        assert await left_in_store(w, EMU) == []
        assert fact.fact in [f"my emu is called {EMU}"]
