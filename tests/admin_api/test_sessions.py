"""Sessions over HTTP: listing, messages with archived ones, export/import round trips."""

from __future__ import annotations

import base64
import copy
from collections.abc import AsyncIterator, Callable
from typing import Any

from tests.admin_api.conftest import Admin, StartAdmin
from tests.conftest import LOCAL

BLOB = bytes(range(256)) * 3


async def build_session(admin: Admin) -> str:
    """A session with a reply chain, archived messages, a condensed summary and a file."""
    repos = admin.services.repos
    session = await repos.sessions.create(
        LOCAL, title="Trip", source="discord", discord_channel_id=111, discord_guild_id=222
    )
    attachment = await repos.attachments.add(
        LOCAL, session.id, "plan.bin", "application/octet-stream", BLOB
    )
    ids = []
    for n in range(6):
        question = await repos.messages.add(
            LOCAL,
            session.id,
            "user",
            f"q{n} see attachment:{attachment.id}",
            author_id="u1",
            author_name="Ann",
            discord_message_id=9000 + n,
        )
        answer = await repos.messages.add(
            LOCAL, session.id, "assistant", f"a{n}", reply_to=question.id
        )
        ids += [question.id, answer.id]
    first = await repos.memories.summarize_messages(LOCAL, session.id, ids[:4], "summary one")
    second = await repos.memories.summarize_messages(LOCAL, session.id, ids[4:8], "summary two")
    assert first is not None and second is not None
    condensed = await repos.memories.condense(LOCAL, session.id, [first.id, second.id], "both", 1)
    assert condensed is not None
    return session.id


def normalized(export: dict[str, Any], *, detached: bool = False) -> dict[str, Any]:
    """The export with database-assigned ids replaced by ordinals (and the export time dropped)."""
    data = copy.deepcopy(export)
    data.pop("exported_at")
    data["session"]["id"] = "S"
    message_ids = {
        m["id"]: n for n, m in enumerate(sorted(data["messages"], key=lambda m: m["id"]))
    }
    memory_ids = {m["id"]: n for n, m in enumerate(sorted(data["memories"], key=lambda m: m["id"]))}
    attachment_ids = {a["id"]: f"A{n}" for n, a in enumerate(data["attachments"])}
    for message in data["messages"]:
        message["id"] = message_ids[message["id"]]
        if message["reply_to"] is not None:
            message["reply_to"] = message_ids[message["reply_to"]]
        if message["memory_id"] is not None:
            message["memory_id"] = memory_ids[message["memory_id"]]
        for old, new in attachment_ids.items():
            message["content"] = message["content"].replace(old, new)
        if detached:
            message["discord_message_id"] = None
    for memory in data["memories"]:
        memory["id"] = memory_ids[memory["id"]]
        if memory["condensed_into"] is not None:
            memory["condensed_into"] = memory_ids[memory["condensed_into"]]
    for attachment in data["attachments"]:
        attachment["id"] = attachment_ids[attachment["id"]]
    if detached:
        data["session"]["discord_channel_id"] = data["session"]["discord_guild_id"] = None
    return data


async def test_export_import_round_trip_gives_an_equal_session(
    start_admin: StartAdmin, new_database_url: Callable[[str], str]
) -> None:
    admin = await start_admin()
    session_id = await build_session(admin)
    first = await admin.get(f"/api/sessions/{session_id}/export")
    assert first.status == 200
    assert "attachment" in first.headers["Content-Disposition"]
    exported = first.json
    assert exported["version"] == 1
    assert len(exported["messages"]) == 12
    assert sum(m["archived_at"] is not None for m in exported["messages"]) == 8
    assert base64.b64decode(exported["attachments"][0]["data_base64"]) == BLOB

    clash = await admin.post("/api/sessions/import", exported)
    assert clash.status == 409 and clash.json["error"] == "conflict"

    copy_reply = await admin.post("/api/sessions/import", exported, params={"as_new": "true"})
    assert copy_reply.status == 201, copy_reply.text
    copy_id = copy_reply.json["session_id"]
    assert copy_id != session_id
    again = (await admin.get(f"/api/sessions/{copy_id}/export")).json
    assert normalized(again) == normalized(exported, detached=True)
    assert again["session"]["discord_channel_id"] is None, "a copy never takes over the thread"
    original = await admin.services.repos.sessions.open_for_channel(LOCAL, 111)
    assert original is not None and original.id == session_id

    other = await start_admin(database_url=new_database_url("other.db"))
    moved = await other.post("/api/sessions/import", exported)
    assert moved.status == 201 and moved.json["session_id"] == session_id, "id kept when free"
    moved_export = (await other.get(f"/api/sessions/{session_id}/export")).json
    assert normalized(moved_export) == normalized(exported)
    assert moved_export["session"] == exported["session"]
    live = await other.services.repos.messages.recent_live(LOCAL, session_id, 50)
    assert [m.content for m in live] == [
        "q4 see attachment:" + exported["attachments"][0]["id"],
        "a4",
        "q5 see attachment:" + exported["attachments"][0]["id"],
        "a5",
    ]
    assert (await other.post("/api/sessions/import", exported)).status == 409


async def test_invalid_imports_are_refused_and_change_nothing(admin: Admin) -> None:
    session_id = await build_session(admin)
    good = (await admin.get(f"/api/sessions/{session_id}/export")).json
    good["session"]["id"] = "fresh-id"
    good["messages"] = [m | {"discord_message_id": None} for m in good["messages"]]
    good["attachments"] = [a | {"id": "fresh-att"} for a in good["attachments"]]

    def broken(change: Any) -> dict[str, Any]:
        data = copy.deepcopy(good)
        change(data)
        return data

    cases = [
        broken(lambda d: d.update(version=2)),
        broken(lambda d: d["messages"][1].update(reply_to=99999)),
        broken(lambda d: d["messages"][0].update(memory_id=99999)),
        broken(lambda d: d["memories"][0].update(condensed_into=99999)),
        broken(lambda d: d["messages"][0].update(role="tool")),
        broken(lambda d: d["messages"].append(d["messages"][0])),
        broken(lambda d: d["attachments"][0].update(data_base64="not base64!")),
        broken(lambda d: d["attachments"][0].update(size=1)),
        broken(lambda d: d["session"].update(id="../../etc")),
        broken(lambda d: d["session"].update(created_at="yesterday")),
        broken(lambda d: d.update(extra=True)),
    ]
    for case in cases:
        reply = await admin.post("/api/sessions/import", case)
        assert reply.status == 422, reply.text
        assert reply.json["error"] == "validation_error"
    assert await admin.services.repos.sessions.get(LOCAL, "fresh-id") is None
    assert (await admin.post("/api/sessions/import", good)).status == 201


async def test_session_list_messages_and_delete(admin: Admin) -> None:
    session_id = await build_session(admin)
    others = [await admin.services.repos.sessions.create(LOCAL, title=f"s{n}") for n in range(2)]
    page = await admin.get("/api/sessions", params={"limit": "2"})
    assert [s["id"] for s in page.json["items"]] == [others[1].id, others[0].id]
    rest = await admin.get(
        "/api/sessions", params={"limit": "2", "before": page.json["next_cursor"]}
    )
    assert [s["id"] for s in rest.json["items"]] == [session_id]
    assert rest.json["next_cursor"] is None

    messages = (await admin.get(f"/api/sessions/{session_id}/messages")).json["messages"]
    assert len(messages) == 12
    archived = [m for m in messages if m["archived_at"] is not None]
    assert len(archived) == 8 and all(m["memory_id"] is not None for m in archived)
    assert [m["content"] for m in messages[:2]] == [messages[0]["content"], "a0"]

    one = await admin.get(f"/api/sessions/{session_id}")
    assert one.json["discord_channel_id"] == "111"
    assert (await admin.get("/api/sessions/missing")).status == 404
    assert (await admin.get("/api/sessions/missing/messages")).status == 404
    assert (await admin.get("/api/sessions/missing/export")).status == 404
    assert (await admin.delete(f"/api/sessions/{session_id}")).json == {"deleted": 1}
    assert (await admin.get(f"/api/sessions/{session_id}")).status == 404


async def test_body_size_limits(start_admin: StartAdmin) -> None:
    admin = await start_admin(config_changes={"max_body_bytes": 2_000, "max_import_bytes": 60_000})
    big_note = await admin.post("/api/notes", {"title": "big", "content": "x" * 3_000})
    assert big_note.status == 413 and big_note.json["error"] == "too_large"

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"title": "chunked", "content": "'
        for _ in range(10):
            yield b"y" * 500
        yield b'"}'

    chunked = await admin.call(
        "POST",
        "/api/notes",
        data=chunks(),
        headers={"Content-Type": "application/json"},  # type: ignore[arg-type]
    )
    assert chunked.status == 413, "no Content-Length: the limit holds while reading"

    session_id = await build_session(admin)
    exported = (await admin.get(f"/api/sessions/{session_id}/export")).json
    imported = await admin.post("/api/sessions/import", exported, params={"as_new": "1"})
    assert imported.status == 201, "imports may exceed the normal body limit"
    exported["messages"][0]["content"] = "z" * 70_000
    too_big = await admin.post("/api/sessions/import", exported, params={"as_new": "1"})
    assert too_big.status == 413
