"""Slash commands through the real discord.py client: notes, model, memory, reset, export."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bot.exts import _common as common
from tests.discord.conftest import WAIT, World, WorldFactory
from tests.fakes.llm_server import Text


async def _thread(w: World, text: str = "hello", answer: str = "Hi!") -> int:
    """Open a conversation thread and wait for its first answer."""
    w.llm.script(Text(answer, chunks=1))
    sent = await w.server.inject_message(text)
    thread_id = await w.wait_thread(sent)
    await w.wait_text(thread_id, answer)
    return thread_id


async def test_commands_are_synced_to_the_configured_guild(world: WorldFactory) -> None:
    async with world() as w:
        names = {c["name"] for c in w.server.commands(w.server.guild_id)}
        assert names == {
            "note",
            "memory",
            "knowledge",
            "model",
            "export",
            "reset",
            "topic",
            "tools",
        }
        assert w.server.commands() == [], "guild-scoped only when DISCORD_GUILD_IDS is set"
        note = next(c for c in w.server.commands(w.server.guild_id) if c["name"] == "note")
        subcommands = {o["name"] for o in note["options"]}
        assert subcommands == {"list", "read", "write", "append", "delete", "link", "unlink"}


async def test_note_write_then_read_append_list_and_autocomplete(world: WorldFactory) -> None:
    async with world() as w:
        ix = await w.server.inject_interaction(
            "note write", {"title": "Groceries", "content": "milk\neggs @everyone"}
        )
        reply = await w.server.wait_for_reply(ix)
        assert reply.ephemeral and "Created note **Groceries**" in reply.content

        ix = await w.server.inject_interaction("note append", {"title": "groceries", "text": "tea"})
        assert "Appended" in (await w.server.wait_for_reply(ix)).content

        ix = await w.server.inject_interaction("note read", {"title": "Groceries"})
        read = await w.server.wait_for_reply(ix)
        assert read.content == "**Groceries**\nmilk\neggs @everyone\ntea"
        assert not read.pings() and read.suppress_embeds

        ix = await w.server.inject_interaction(
            "note write", {"title": "Groceries", "content": "bread"}
        )
        assert "Saved note" in (await w.server.wait_for_reply(ix)).content
        page = await w.services.notes.find(w.space, "Groceries")
        assert page is not None and page.content == "bread"

        ix = await w.server.inject_interaction("note list")
        assert "Groceries" in (await w.server.wait_for_reply(ix)).content

        auto = await w.server.inject_interaction(
            "note read", {"title": "gro"}, autocomplete="title"
        )
        choices = await w.server.wait_for(lambda: auto.choices)
        assert [c["value"] for c in choices] == ["Groceries"]

        ix = await w.server.inject_interaction("note read", {"title": "nothing here"})
        missing = await w.server.wait_for_reply(ix)
        assert missing.ephemeral and "No note titled 'nothing here'" in missing.content


async def test_note_link_attaches_the_page_to_this_thread(world: WorldFactory) -> None:
    async with world() as w:
        await w.services.notes.create(w.space, "Trip", "Leave at 9:00 from Kyoto station.")
        ix = await w.server.inject_interaction("note link", {"title": "Trip"})
        refused = await w.server.wait_for_reply(ix)
        assert refused.ephemeral and "conversation threads" in refused.content

        thread_id = await _thread(w)
        ix = await w.server.inject_interaction("note link", {"title": "Trip"}, channel_id=thread_id)
        assert "Linked **Trip**" in (await w.server.wait_for_reply(ix)).content
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        page = await w.services.notes.find(w.space, "Trip")
        assert session is not None and page is not None
        assert await w.services.notes.linked_page_ids(session.space_id, session.id) == [page.id]

        w.llm.script(Text("At nine.", chunks=1))
        await w.server.inject_message("when do we leave?", channel_id=thread_id, mention_bot=False)
        await w.wait_text(thread_id, "At nine.")
        sent = "\n".join(str(m.get("content")) for m in w.llm.chat_requests[-1].messages)
        assert "Leave at 9:00 from Kyoto station." in sent

        ix = await w.server.inject_interaction(
            "note unlink", {"title": "Trip"}, channel_id=thread_id
        )
        assert "Unlinked" in (await w.server.wait_for_reply(ix)).content
        assert await w.services.notes.linked_page_ids(session.space_id, session.id) == []


async def test_model_set_is_refused_for_non_admins_before_any_change(world: WorldFactory) -> None:
    async with world() as w:
        await w.services.repos.presets.create("Other", "ollama/other-model")
        thread_id = await _thread(w)
        ix = await w.server.inject_interaction(
            "model set", {"value": "ollama/other-model"}, channel_id=thread_id
        )
        refused = await w.server.wait_for_reply(ix)
        assert refused.ephemeral and "Manage Server" in refused.content
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None and session.model is None
        assert w.services.settings().llm_model == "ollama/test-model"

        admin = w.server.admin_user
        ix = await w.server.inject_interaction(
            "model set", {"value": "ollama/nope"}, channel_id=thread_id, user=admin
        )
        assert "not one of the model presets" in (await w.server.wait_for_reply(ix)).content

        auto = await w.server.inject_interaction(
            "model set", {"value": "oth"}, channel_id=thread_id, user=admin, autocomplete="value"
        )
        choices = await w.server.wait_for(lambda: auto.choices)
        assert [c["value"] for c in choices] == ["ollama/other-model"]

        ix = await w.server.inject_interaction(
            "model set", {"value": "ollama/other-model"}, channel_id=thread_id, user=admin
        )
        assert "now uses **ollama/other-model**" in (await w.server.wait_for_reply(ix)).content
        session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert session is not None and session.model == "ollama/other-model"

        w.llm.script(Text("From the other model.", chunks=1))
        await w.server.inject_message("again", channel_id=thread_id, mention_bot=False)
        await w.wait_text(thread_id, "From the other model.")
        assert w.llm.chat_requests[-1].model == "other-model"

        ix = await w.server.inject_interaction("model show", channel_id=thread_id)
        shown = await w.server.wait_for_reply(ix)
        assert (
            "**ollama/other-model**" in shown.content and "**ollama/test-model**" in shown.content
        )

        # Outside a conversation, an admin changes this server's default model (not the global).
        ix = await w.server.inject_interaction(
            "model set", {"value": "ollama/other-model"}, user=admin
        )
        assert "default model of this server" in (await w.server.wait_for_reply(ix)).content
        assert w.services.settings().llm_model == "ollama/test-model"
        record = await w.services.spaces.get(w.space)
        assert record is not None and record.default_model == "ollama/other-model"
        ix = await w.server.inject_interaction("model show")
        shown = (await w.server.wait_for_reply(ix)).content
        assert "**ollama/other-model** (this server's default)" in shown

        ix = await w.server.inject_interaction("model set", {"value": "default"}, user=admin)
        assert "global default model again" in (await w.server.wait_for_reply(ix)).content
        record = await w.services.spaces.get(w.space)
        assert record is not None and record.default_model is None


async def test_memory_reset_and_export(world: WorldFactory) -> None:
    async with world() as w:
        thread_id = await _thread(w, "first question", "First answer.")
        ix = await w.server.inject_interaction("memory show", channel_id=thread_id)
        assert "no long-term memory" in (await w.server.wait_for_reply(ix)).content
        ix = await w.server.inject_interaction("memory forget", channel_id=thread_id)
        assert "Forgot 0 summaries" in (await w.server.wait_for_reply(ix)).content

        ix = await w.server.inject_interaction("export", channel_id=thread_id)
        exported = await w.server.wait_for_reply(ix)
        assert exported.ephemeral and exported.attachments
        markdown = exported.attachments[0].data.decode()
        assert exported.attachments[0].filename.endswith(".md")
        assert "first question" in markdown and "First answer." in markdown

        ix = await w.server.inject_interaction("export", {"format": "json"}, channel_id=thread_id)
        data = json.loads((await w.server.wait_for_reply(ix)).attachments[0].data)
        assert [m["content"] for m in data["messages"]] == ["first question", "First answer."]

        old = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        ix = await w.server.inject_interaction("reset", channel_id=thread_id)
        done = await w.server.wait_for_reply(ix)
        assert not done.ephemeral and "fresh conversation" in done.content
        new = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
        assert old is not None and new is not None and new.id != old.id
        assert (await w.services.repos.sessions.get(w.space, old.id)).closed_at is not None  # type: ignore[union-attr]

        w.llm.script(Text("Fresh start.", chunks=1))
        await w.server.inject_message("second question", channel_id=thread_id, mention_bot=False)
        await w.wait_text(thread_id, "Fresh start.")
        sent = "\n".join(str(m.get("content")) for m in w.llm.chat_requests[-1].messages)
        assert "first question" not in sent, "the reset thread starts from a clean context"


class _SlowNotes:
    """A notes service whose listing waits for the test, or fails."""

    def __init__(self, release: asyncio.Event | None) -> None:
        self.release = release

    async def list_pages(self, space: str) -> list[Any]:
        if self.release is None:
            raise RuntimeError("database on fire")
        await asyncio.wait_for(self.release.wait(), WAIT)
        return []


async def test_slow_commands_are_deferred_and_failures_answered_briefly(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(common, "DEFER_AFTER", 0.05)
    async with world() as w:
        release = asyncio.Event()
        monkeypatch.setattr(w.services, "notes", _SlowNotes(release))
        ix = await w.server.inject_interaction("note list")
        await w.server.wait_for(lambda: ix.callback_type == 5)  # "thinking…" first
        release.set()
        reply = await w.server.wait_for_reply(ix)
        assert "no notes yet" in reply.content and reply.ephemeral

        monkeypatch.setattr(w.services, "notes", _SlowNotes(None))
        ix = await w.server.inject_interaction("note list")
        failed = await w.server.wait_for_reply(ix)
        assert failed.ephemeral and failed.content == "Something went wrong. Please try again."
        assert "database on fire" not in failed.content
        assert any("/note list failed" in r.getMessage() for r in caplog.records)


async def test_access_lists_apply_to_slash_commands(world: WorldFactory) -> None:
    async with world(configure=lambda s: {"discord_denied_user_ids": [s.user.id]}) as w:
        ix = await w.server.inject_interaction("note write", {"title": "x", "content": "y"})
        refused = await w.server.wait_for_reply(ix)
        assert refused.ephemeral and refused.content == "You cannot use PlayChat here."
        assert await w.services.notes.find(w.space, "x") is None
        ix = await w.server.inject_interaction("note list", user=w.server.admin_user)
        assert "no notes yet" in (await w.server.wait_for_reply(ix)).content


async def test_without_guild_ids_commands_sync_globally(world: WorldFactory) -> None:
    async with world(discord_guild_ids=[]) as w:
        assert {c["name"] for c in w.server.commands()} == {
            "note",
            "memory",
            "knowledge",
            "model",
            "export",
            "reset",
            "topic",
            "tools",
        }
        assert w.server.commands(w.server.guild_id) == []
