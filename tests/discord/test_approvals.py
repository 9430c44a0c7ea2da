"""Tools with side effects ask first (issue 39, item 4): Allow / Deny buttons for the member
who asked, through the real discord.py client; a timeout denies; every decision is stored."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.exts.chat._approval import CUSTOM_ID_PREFIX
from bot.store.repos.api_logs import ApiLogFilter
from bot.store.repos.tool_calls import ToolCallRecord
from tests.discord.conftest import World, WorldFactory
from tests.fakes.discord_server import FakeMessage
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls
from tests.mcp.conftest import WAIT as MCP_WAIT
from tests.mcp.conftest import stdio_entry

WRITE = ("write_note", {"title": "Trip plan", "content": "Leave at nine.", "mode": "create"})


def _question(w: World, channel_id: int) -> FakeMessage | None:
    """The bot's message in `channel_id` that shows approval buttons, if any."""
    return next(
        (
            m
            for m in w.bot_messages(channel_id)
            if any(c.startswith(CUSTOM_ID_PREFIX) for c in m.custom_ids())
        ),
        None,
    )


def _button(message: FakeMessage, verdict: str) -> str:
    (custom_id,) = [c for c in message.custom_ids() if c.endswith(f":{verdict}")]
    return custom_id


def _tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m["role"] == "tool"]


async def _ask(w: World, text: str = "note the plan") -> tuple[int, FakeMessage]:
    """The member asks; the model calls write_note; the bot's question (with its buttons)."""
    w.llm.script(ToolCalls([WRITE]), Text("Done."))
    opener = await w.server.inject_message(text)
    thread_id = await w.wait_thread(opener)
    question = await w.server.wait_for(lambda: _question(w, thread_id))
    return thread_id, question


async def _calls(w: World, thread_id: int) -> list[ToolCallRecord]:
    session = await w.services.repos.sessions.open_for_channel(w.space, thread_id)
    assert session is not None
    return await w.services.repos.tool_calls.for_session(w.space, session.id)


async def test_the_member_allows_and_the_note_is_written(
    world: WorldFactory, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with world(database_url=database_url, confirm_note_writes=True) as w:
        thread_id, question = await _ask(w)
        member = w.server.user
        assert f"<@{member.id}>" in question.content and "write_note" in question.content
        assert len(w.llm.chat_requests) == 1, "the model waits for the member's answer"
        assert await w.services.notes.list_pages(w.space) == []

        stranger = w.server.add_user("bob")
        refused = await w.server.press(question, _button(question, "allowed"), user=stranger)
        await w.server.wait_for(lambda: refused.acknowledged)
        assert refused.callback_type == 4 and refused.messages()[0].ephemeral
        assert refused.texts() == [f"Only <@{member.id}> can decide this."]
        assert question.custom_ids() == [_button(question, "allowed"), _button(question, "denied")]
        assert await w.services.notes.list_pages(w.space) == []

        pressed = await w.server.press(question, _button(question, "allowed"))
        await w.wait_text(thread_id, "Done.")
        assert pressed.callback_type == 7
        assert question.content.startswith("✅") and question.components == []
        assert [p.title for p in await w.services.notes.list_pages(w.space)] == ["Trip plan"]
        (result,) = _tool_results(w.llm.chat_requests[1])
        assert "Trip plan" in result and "Not run" not in result
        (call,) = await _calls(w, thread_id)
        assert (call.tool, call.ok, call.approval, call.approved_by) == (
            "write_note",
            True,
            "allowed",
            str(member.id),
        )
        decisions = [r.getMessage() for r in caplog.records if r.name == "bot.chat.approval"]
        assert decisions == [
            f"approval of write_note in session {call.session_id}: allowed "
            f"(decided by {member.id}, asked {member.id})"
        ]
        infos = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
        assert not [line for line in infos if "Leave at nine." in line], "no bodies at INFO"


async def test_the_member_denies_and_the_model_answers_without_the_tool(
    world: WorldFactory, database_url: str
) -> None:
    async with world(database_url=database_url, confirm_note_writes=True) as w:
        thread_id, question = await _ask(w)
        await w.server.press(question, _button(question, "denied"))
        await w.wait_text(thread_id, "Done.")
        assert question.content.startswith("🚫") and question.components == []
        assert await w.services.notes.list_pages(w.space) == []
        (result,) = _tool_results(w.llm.chat_requests[1])
        assert "denied the call of write_note" in json.loads(result.split("\n", 1)[1])["error"]
        (call,) = await _calls(w, thread_id)
        assert (call.ok, call.approval, call.approved_by) == (
            False,
            "denied",
            str(w.server.user.id),
        )
        logs = await w.services.repos.api_logs.list(ApiLogFilter(space_id=w.space))
        (decision,) = [row for row in logs if row.purpose == "approval"]
        assert json.loads(decision.request_json) == {
            "tool": "write_note",
            "call_id": call.call_id,
            "verdict": "denied",
            "decided_by": str(w.server.user.id),
        }
        assert decision.error == "not run: denied"


async def test_no_answer_in_time_denies_and_removes_the_buttons(
    world: WorldFactory, database_url: str
) -> None:
    async with world(
        database_url=database_url, confirm_note_writes=True, approval_timeout_seconds=1
    ) as w:
        thread_id, question = await _ask(w)
        await w.wait_text(thread_id, "Done.")
        assert question.content.startswith("⌛") and question.components == []
        assert "1 s" in question.content
        assert await w.services.notes.list_pages(w.space) == []
        (result,) = _tool_results(w.llm.chat_requests[1])
        assert "no answer within 1 s" in result
        (call,) = await _calls(w, thread_id)
        assert (call.ok, call.approval, call.approved_by) == (False, "timeout", None)


async def test_without_the_setting_a_note_write_does_not_ask(
    world: WorldFactory, database_url: str
) -> None:
    async with world(database_url=database_url) as w:
        w.llm.script(ToolCalls([WRITE]), Text("Done."))
        opener = await w.server.inject_message("note the plan")
        thread_id = await w.wait_thread(opener)
        await w.wait_text(thread_id, "Done.")
        assert _question(w, thread_id) is None
        (call,) = await _calls(w, thread_id)
        assert (call.ok, call.approval) == (True, None)


async def _open_thread(w: World) -> int:
    """A bot thread with an answered opener."""
    w.llm.default_reply = lambda request: Text("Opened.")
    opener = await w.server.inject_message("hello")
    thread_id = await w.wait_thread(opener)
    await w.wait_text(thread_id, "Opened.")
    return thread_id


async def _say(w: World, thread_id: int, text: str) -> None:
    await w.server.inject_message(text, channel_id=thread_id, mention_bot=False)


async def test_a_message_sent_while_asked_is_a_turn_of_its_own(
    world: WorldFactory, database_url: str
) -> None:
    async with world(database_url=database_url, confirm_note_writes=True) as w:
        thread_id = await _open_thread(w)
        before = len(w.llm.chat_requests)
        w.llm.script(ToolCalls([WRITE]), Text("Written."), Text("And the second."))
        await _say(w, thread_id, "note the plan")
        question = await w.server.wait_for(lambda: _question(w, thread_id))
        await _say(w, thread_id, "also bring tea")
        await w.server.press(question, _button(question, "allowed"))
        await w.wait_text(thread_id, "And the second.")
        assert question.content.startswith("✅"), "the question was answered, not cancelled"
        requests: list[Any] = w.llm.chat_requests[before:]
        users = [[m["content"] for m in r.messages if m["role"] == "user"] for r in requests]
        assert len(requests) == 3, users
        assert [u[-1].endswith("note the plan") for u in users] == [True, True, False]
        assert users[2][-1].endswith("also bring tea")
        assert [p.title for p in await w.services.notes.list_pages(w.space)] == ["Trip plan"]
        (call,) = await _calls(w, thread_id)
        assert call.approval == "allowed"
        answers = [m.content for m in w.bot_messages(thread_id)]
        assert answers[-2:] == ["Written.", "And the second."]


async def test_a_message_while_asked_never_joins_the_turn_nor_cancels_the_question(
    world: WorldFactory, database_url: str
) -> None:
    # With one turn per member, a message that does not join the running turn is refused as
    # busy: the notice shows it was taken as a turn of its own (a joining one gets none).
    async with world(
        database_url=database_url, confirm_note_writes=True, user_max_concurrent_turns=1
    ) as w:
        thread_id = await _open_thread(w)
        w.llm.script(ToolCalls([WRITE]), Text("Written."))
        await _say(w, thread_id, "note the plan")
        question = await w.server.wait_for(lambda: _question(w, thread_id))
        await _say(w, thread_id, "also bring tea")
        busy = await w.server.wait_for(
            lambda: next((m for m in w.bot_messages(thread_id) if "⏳" in m.content), None)
        )
        assert busy.id != question.id and question.custom_ids(), "the question is still open"
        await w.server.press(question, _button(question, "allowed"))
        await w.server.wait_for(
            lambda: "Written." in [m.content for m in w.bot_messages(thread_id)] or None
        )
        await w.settle()
        assert question.content.startswith("✅")
        (call,) = await _calls(w, thread_id)
        assert call.approval == "allowed"


async def test_an_mcp_server_marked_confirm_asks_before_each_call(
    world: WorldFactory, tmp_path: Path
) -> None:
    appended = tmp_path / "appended.txt"
    config = tmp_path / "mcp.json"
    env = {"DEMO_APPEND_FILE": str(appended)}
    servers = {
        "careful": stdio_entry(confirm=True, env=env),
        "free": stdio_entry(env=env),
    }
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    async with world(mcp_config=config) as w:
        await w.services.mcp.wait_for(
            lambda statuses: all(s.tools for s in statuses), within=MCP_WAIT
        )
        w.llm.script(ToolCalls([("careful__append", {"line": "denied line"})]), Text("Skipped."))
        opener = await w.server.inject_message("append a line")
        thread_id = await w.wait_thread(opener)
        question = await w.server.wait_for(lambda: _question(w, thread_id))
        assert "append (careful)" in question.content
        await w.server.press(question, _button(question, "denied"))
        await w.wait_text(thread_id, "Skipped.")
        assert not appended.exists(), "the MCP server never received the denied call"

        w.llm.script(
            ToolCalls([("careful__append", {"line": "allowed line"})]),
            ToolCalls([("free__append", {"line": "free line"})]),
            Text("Both done."),
        )
        await _say(w, thread_id, "append another")
        second = await w.server.wait_for(lambda: _question(w, thread_id))  # the first has none
        assert second.id != question.id
        await w.server.press(second, _button(second, "allowed"))
        await w.wait_text(thread_id, "Both done.")
        assert appended.read_text(encoding="utf-8") == "allowed line\nfree line\n"
        questions = [m for m in w.bot_messages(thread_id) if m.component_versions[0]]
        assert len(questions) == 2, "the server without confirm did not ask"
        calls = await _calls(w, thread_id)
        assert [(c.tool, c.approval) for c in calls] == [
            ("careful__append", "denied"),
            ("careful__append", "allowed"),
            ("free__append", None),
        ]


async def test_a_question_waits_no_longer_than_the_turn_may_take(
    world: WorldFactory, database_url: str
) -> None:
    # APPROVAL_TIMEOUT_SECONDS is 120, but the whole turn may take 3 s: the member is told
    # the time they really have, and the question closes when it is up.
    async with world(database_url=database_url, confirm_note_writes=True, turn_timeout=3) as w:
        _thread_id, question = await _ask(w)
        seconds = int(question.content.split("no answer within ")[1].split(" s")[0])
        assert 1 <= seconds <= 3, question.content
        await w.server.wait_for(lambda: question.content.startswith("⌛") or None)
        await w.settle()
        assert question.components == [] and f"within {seconds} s" in question.content
        assert await w.services.notes.list_pages(w.space) == []
