"""POST /api/chat/stream: the engine's events as server-sent events, over a real socket."""

from __future__ import annotations

import asyncio
import json

import jsonschema

from admin_api.schemas.chat import chat_event_schema
from bot.store.spaces import ALL_SPACES
from bot.tools.web_search import web_search_sources
from bot.turn.events import (
    ChunkEvent,
    DoneEvent,
    ErrorEvent,
    NotesUpdatedEvent,
    RememberedEvent,
    SessionEvent,
    SourcesEvent,
    ToolEvent,
    to_wire,
)
from bot.turn.hooks import TurnResult
from tests.admin_api.conftest import TOKEN, Admin, StartAdmin, sse_events
from tests.conftest import LOCAL
from tests.fakes.llm_server import HttpError, Text, ToolCalls
from tests.ops.conftest import closed_port


async def test_turn_with_a_tool_call_streams_the_seed_events_in_order(admin: Admin) -> None:
    async def web_search(query: str) -> str:
        """Search the web.

        Args:
            query: What to look for.
        """
        return json.dumps([{"title": "Kyoto weather", "href": "https://weather.example/kyoto"}])

    admin.services.registry.register(web_search, sources=web_search_sources)
    admin.llm.script(
        ToolCalls([("web_search", {"query": "kyoto weather"})]),
        Text("# Kyoto weather\nSunny all day."),  # the knowledge summary of the search
        # Pieces apart in time, as a model streams them.
        Text("It is sunny in Kyoto.", chunks=3, delay=0.25),
    )
    reply = await admin.post("/api/chat/stream", {"message": "weather in Kyoto?"})

    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    assert reply.headers["Cache-Control"] == "no-cache"
    assert reply.headers["X-Accel-Buffering"] == "no"
    events = sse_events(reply.text)
    kinds = [event["type"] for event in events]
    assert kinds == [
        "session_id",
        "tool",
        "tool",
        "sources",
        "tool",
        "tool",
        "chunk",
        "chunk",
        "chunk",
        "done",
    ]
    running, done = events[1]["value"], events[2]["value"]
    assert running["status"] == "running" and running["name"] == "web_search"
    assert {"id", "name", "label", "detail", "status"} <= set(running)
    assert done["id"] == running["id"] and done["status"] == "done"
    assert "Kyoto weather" in done["result"]
    assert events[3]["value"] == [
        {"title": "Kyoto weather", "url": "https://weather.example/kyoto"}
    ]
    saving, saved = events[4]["value"], events[5]["value"]
    assert (saving["id"], saving["status"]) == ("save_knowledge", "running")
    assert (saved["id"], saved["status"], saved["result"]) == (
        "save_knowledge",
        "done",
        "Kyoto weather",
    )
    assert "".join(event["value"] for event in events if event["type"] == "chunk") == (
        "It is sunny in Kyoto."
    )
    session_id = events[0]["value"]
    stored = await admin.services.repos.messages.all_for_session(LOCAL, session_id)
    assert [(m.role, m.content) for m in stored] == [
        ("user", "weather in Kyoto?"),
        ("assistant", "It is sunny in Kyoto."),
    ]
    assert events[-1]["message_id"] == stored[-1].id
    session = await admin.services.repos.sessions.get(LOCAL, session_id)
    assert session is not None and session.source == "admin"

    knowledge = await admin.get("/api/memory/knowledge")
    assert [entry["title"] for entry in knowledge.json["items"]] == ["Kyoto weather"]
    assert knowledge.json["items"][0]["sources"][0]["url"] == "https://weather.example/kyoto"

    admin.llm.script(Text("Still sunny."))
    again = await admin.post("/api/chat/stream", {"message": "and now?", "session_id": session_id})
    again_events = sse_events(again.text)
    assert "session_id" not in [event["type"] for event in again_events], "not a new session"
    assert again_events[-1]["type"] == "done"
    assert len(await admin.services.repos.messages.all_for_session(LOCAL, session_id)) == 4


async def test_note_write_streams_notes_updated(admin: Admin) -> None:
    admin.llm.script(
        ToolCalls([("write_note", {"title": "Groceries", "content": "milk", "mode": "create"})]),
        Text("Added."),
    )
    events = sse_events((await admin.post("/api/chat/stream", {"message": "note milk"})).text)
    assert [event["type"] for event in events] == [
        "session_id",
        "tool",
        "tool",
        "notes_updated",
        "chunk",
        "done",
    ]
    pages = (await admin.get("/api/notes")).json["pages"]
    assert [(page["title"], page["content"]) for page in pages] == [("Groceries", "milk")]


async def test_llm_failure_streams_an_error_event(admin: Admin) -> None:
    admin.llm.script(HttpError(400, "model exploded"), HttpError(400, "model exploded"))
    reply = await admin.post("/api/chat/stream", {"message": "hello"})
    kinds = [event["type"] for event in sse_events(reply.text)]
    assert kinds[0] == "session_id" and kinds[-1] == "error"
    assert "done" not in kinds


async def test_bad_chat_requests_get_json_errors_not_a_stream(admin: Admin) -> None:
    for body in ({"message": ""}, {}, {"message": "x", "session_id": "../etc"}, {"message": 5}):
        reply = await admin.post("/api/chat/stream", body)
        assert reply.status == 422, body
        assert reply.headers["Content-Type"].startswith("application/json")
        assert reply.json["error"] == "validation_error"
    unknown_page = await admin.post("/api/chat/stream", {"message": "x", "note_page_ids": [999]})
    assert unknown_page.status == 422 and "999" in unknown_page.json["detail"]
    assert await admin.services.repos.sessions.list(ALL_SPACES) == [], "no half-made session"
    assert admin.llm.chat_requests == []


async def test_reader_leaving_does_not_kill_the_turn(admin: Admin) -> None:
    finished = asyncio.Event()
    results: list[TurnResult] = []

    async def on_turn(result: TurnResult) -> None:
        results.append(result)
        finished.set()

    admin.services.engine.add_turn_hook(on_turn)
    admin.llm.script(Text("one two three four five six", chunks=6, delay=0.05))
    async with admin.http.post(
        admin.url + "/api/chat/stream",
        json={"message": "count slowly"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as response:
        first = await response.content.readuntil(b"\n\n")
        assert json.loads(first[len(b"data: ") :])["type"] == "session_id"
        response.close()  # the reader goes away mid-turn
    await asyncio.wait_for(finished.wait(), 10)
    assert results[0].answer.content == "one two three four five six"


async def test_a_request_to_remember_streams_its_receipt_before_the_answer(admin: Admin) -> None:
    admin.llm.script(Text("Noted."))
    reply = await admin.post("/api/chat/stream", {"message": "remember that I like green tea"})
    events = sse_events(reply.text)
    [fact] = await admin.services.members.list(LOCAL, "local")
    assert [e["type"] for e in events] == ["session_id", "remembered", "chunk", "done"]
    assert events[1]["value"] == {
        "fact_id": fact.id,
        "fact": "I like green tea",
        "saved": True,
        "reason": None,
    }


async def test_note_pages_linked_before_a_new_session_turn(admin: Admin) -> None:
    page = await admin.post("/api/notes", {"title": "Trip plan", "content": "Day 1: Kyoto"})
    page_id = page.json["id"]
    admin.llm.script(Text("Noted."))
    reply = await admin.post("/api/chat/stream", {"message": "plan?", "note_page_ids": [page_id]})
    session_id = sse_events(reply.text)[0]["value"]
    linked = await admin.get(f"/api/sessions/{session_id}/notes")
    assert linked.json == {"session_id": session_id, "page_ids": [page_id]}


def test_the_event_schema_is_derived_from_the_engine_events() -> None:
    validator = jsonschema.Draft202012Validator(chat_event_schema())
    every_kind = [
        SessionEvent("s1", created=True),
        ToolEvent("t1", "web_search", "running", label="Searching", detail="kyoto"),
        ToolEvent("t1", "web_search", "done", result="3 results"),
        ToolEvent("t2", "web_search", "error", result=None),
        NotesUpdatedEvent(),
        SourcesEvent([{"title": "Example", "url": "https://example.com/"}]),
        RememberedEvent(12, "my cat is Mochi", True),
        RememberedEvent(None, "my dog is Pochi", False, "memory_off"),
        ChunkEvent("Hel"),
        DoneEvent("Hello", message_id=7),
        ErrorEvent("The model is not available."),
        ErrorEvent("The model is not available.", detail="The model server at … is not."),
    ]
    for event in every_kind:
        validator.validate(to_wire(event))
    for wrong in (
        {"type": "chunk"},
        {"type": "chunk", "value": 3},
        {"type": "done", "message_id": "7"},
        {
            "type": "remembered",
            "value": {"fact_id": 1, "fact": "x", "saved": "yes", "reason": None},
        },
        {"type": "remembered", "value": {"fact_id": None, "fact": "x", "saved": False}},
        {
            "type": "remembered",
            "value": {"fact_id": None, "fact": "x", "saved": False, "reason": "tired"},
        },
        {"type": "tool", "value": {"id": "t", "name": "n", "status": "running", "result": "x"}},
        {"type": "tool", "value": {"id": "t", "name": "n", "status": "done"}},
        {"type": "whatever", "value": "x"},
    ):
        assert not validator.is_valid(wrong), wrong


async def test_a_failed_turn_tells_the_operator_the_address_and_the_fix(
    start_admin: StartAdmin,
) -> None:
    port = closed_port()
    admin = await start_admin(llm_api_base=f"http://127.0.0.1:{port}")
    reply = await admin.post("/api/chat/stream", {"message": "hello?"})
    assert reply.status == 200
    error = sse_events(reply.text)[-1]
    # The member's sentence stays in `value`; the operator reads `detail`.
    assert error["type"] == "error"
    assert error["value"] == "The language model is not reachable right now."
    assert error["detail"].startswith(f"The model server at http://127.0.0.1:{port} is not")
    assert "LLM_API_BASE" in error["detail"]


async def test_a_note_write_that_asks_first_is_refused_where_nobody_can_be_asked(
    admin: Admin,
) -> None:
    changed = await admin.put("/api/settings", {"values": {"confirm_note_writes": True}})
    assert changed.status == 200, changed.text
    admin.llm.script(
        ToolCalls([("write_note", {"title": "Groceries", "content": "milk", "mode": "create"})]),
        Text("I could not."),
    )
    events = sse_events((await admin.post("/api/chat/stream", {"message": "note milk"})).text)
    kinds = [event["type"] for event in events if event["type"] != "chunk"]
    assert kinds == ["session_id", "tool", "tool", "done"], "no notes_updated: nothing written"
    assert (await admin.get("/api/notes")).json["pages"] == []
    (tool,) = [m for m in admin.llm.chat_requests[1].messages if m["role"] == "tool"]
    assert "needs a member's approval before it runs, and nobody can be asked here" in str(
        tool["content"]
    )
    session_id = events[0]["value"]
    transcript = await admin.get(f"/api/conversations/{session_id}/transcript")
    calls = [call for item in transcript.json["items"] for call in item["tool_calls"]]
    assert [(c["tool"], c["ok"], c["approval"], c["approved_by"]) for c in calls] == [
        ("write_note", False, "unasked", None)
    ]
    logs = (await admin.get("/api/logs", params={"space": LOCAL})).json["items"]
    (decision,) = [row for row in logs if row["purpose"] == "approval"]
    assert (decision["session_id"], decision["space_id"], decision["model"]) == (
        session_id,
        LOCAL,
        "approval:write_note",
    )
    assert decision["error"] == "not run: unasked"
