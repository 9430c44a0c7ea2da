"""Spaces in the admin API, over a real socket and a real SQLite file: every listing filters by
`?space=` (all spaces without it), GET /api/spaces counts, DELETE /api/spaces/{id} purges one
space's rows and files and nothing of another, notes and knowledge move between spaces, and the
admin chat runs in the space it names."""

from __future__ import annotations

from pathlib import Path

from tests.admin_api.conftest import Admin, sse_events
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text

A = "guild:100"
B = "guild:200"
HITS = [{"title": "Forecast", "href": "https://weather.example/", "body": "Sunny"}]


async def fill(admin: Admin, space: str, word: str, channel: int) -> None:
    """A named space with a session and messages, a note, a knowledge entry with its file, a
    topic channel with pool words."""
    services = admin.services
    await services.spaces.ensure(space, f"{word} server")
    session = await services.repos.sessions.create(space, title=f"{word} chat")
    await services.repos.messages.add(space, session.id, "user", f"{word} talk")
    await services.notes.create(space, f"{word} page", f"{word} body")
    admin.llm.script(Text(f"# {word} weather\n- sunny"))
    assert await services.knowledge.save_search(space, f"{word} q", HITS, session_id=None)
    await services.topics.configure(channel, {"enabled": True}, space=space)
    await services.topics.record_activity(space, channel, f"{word}が好き")


def files_of(admin: Admin, space_dir: str) -> list[Path]:
    folder = admin.services.settings().kb_dir / "web_search" / space_dir
    return sorted(folder.glob("*.md")) if folder.exists() else []


async def titles(admin: Admin, path: str, key: str, space: str | None = None) -> list[str]:
    params = {} if space is None else {"space": space}
    reply = await admin.get(path, params=params)
    assert reply.status == 200, reply.text
    return sorted(str(item[key]) for item in _items(reply.json))


def _items(data: dict[str, object]) -> list[dict[str, object]]:
    for name in ("items", "pages", "channels"):
        if name in data:
            return data[name]  # type: ignore[return-value]
    raise AssertionError(data)


async def test_every_listing_filters_by_space_and_carries_it(admin: Admin) -> None:
    await fill(admin, A, "ramen", 10)
    await fill(admin, B, "camera", 20)

    assert await titles(admin, "/api/notes", "title", A) == ["ramen page"]
    assert await titles(admin, "/api/notes", "title") == ["camera page", "ramen page"]
    assert await titles(admin, "/api/notes", "space_id") == [A, B]
    assert await titles(admin, "/api/memory/knowledge", "title", B) == ["camera weather"]
    assert await titles(admin, "/api/memory/knowledge", "space_id") == [A, B]
    assert await titles(admin, "/api/sessions", "title", A) == ["ramen chat"]
    assert await titles(admin, "/api/sessions", "space_id") == [A, B]
    assert await titles(admin, "/api/topics", "channel_id", B) == ["20"]
    assert await titles(admin, "/api/topics", "space_id") == [A, B]

    pool = await admin.get("/api/system/word-pool", params={"space": A})
    assert pool.json == {"space_id": A, "words": ["ramen"]}
    everyone = await admin.get("/api/system/word-pool")
    assert everyone.json["space_id"] is None
    assert sorted(everyone.json["words"]) == ["camera", "ramen"]

    bad = await admin.get("/api/notes", params={"space": "guild:abc"})
    assert bad.status == 422 and "query.space" in bad.json["detail"]
    empty = await admin.get("/api/notes", params={"space": "guild:999"})
    assert empty.json == {"pages": []}


async def test_space_list_names_kinds_and_counts(admin: Admin) -> None:
    await fill(admin, A, "ramen", 10)
    await admin.services.notes.create(A, "second", "")
    await admin.services.spaces.mark_left(A)

    reply = await admin.get("/api/spaces")
    assert reply.status == 200, reply.text
    spaces = {space["id"]: space for space in reply.json["spaces"]}
    a = spaces[A]
    assert (a["kind"], a["name"], a["discord_id"]) == ("guild", "ramen server", "100")
    assert (a["sessions"], a["notes"], a["knowledge"]) == (1, 2, 1)
    assert a["left_at"] is not None


async def test_purge_removes_one_space_rows_and_files_and_leaves_the_other(admin: Admin) -> None:
    await fill(admin, A, "ramen", 10)
    await fill(admin, B, "camera", 20)
    db = admin.services.db
    assert len(files_of(admin, "guild_100")) == 1
    files_b = files_of(admin, "guild_200")

    async def rows(space: str) -> dict[str, int]:
        counts = {}
        for table in ("sessions", "messages", "note_pages", "knowledge_entries", "word_pool"):
            sql = f"SELECT COUNT(*) FROM {table} WHERE space_id = ?"
            counts[table] = int(await db.scalar(sql, (space,)))
        return counts

    rows_b = await rows(B)
    assert all(rows_b.values()), rows_b

    reply = await admin.delete(f"/api/spaces/{A}")
    assert reply.status == 200, reply.text
    report = reply.json
    assert report["space_id"] == A and report["files"] == 1
    assert report["rows"]["sessions"] == 1 and report["rows"]["note_pages"] == 1
    assert report["rows"]["knowledge_entries"] == 1 and report["total_rows"] >= 5

    assert set((await rows(A)).values()) == {0}
    assert files_of(admin, "guild_100") == []
    assert not (admin.services.settings().kb_dir / "web_search" / "guild_100").exists()
    listed = await admin.get("/api/spaces")
    assert A not in [space["id"] for space in listed.json["spaces"]]

    assert await rows(B) == rows_b
    assert files_of(admin, "guild_200") == files_b
    assert await titles(admin, "/api/notes", "title") == ["camera page"]

    again = await admin.delete(f"/api/spaces/{A}")
    assert again.status == 404 and again.json["error"] == "not_found"
    bad = await admin.delete("/api/spaces/nonsense")
    assert bad.status == 422


async def test_move_a_note_and_a_knowledge_entry_with_its_file(admin: Admin) -> None:
    await fill(admin, A, "ramen", 10)
    (page,) = (await admin.get("/api/notes", params={"space": A})).json["pages"]

    moved = await admin.post(f"/api/notes/{page['id']}/move", {"space_id": B})
    assert moved.status == 200, moved.text
    assert moved.json["space_id"] == B and moved.json["title"] == "ramen page"
    assert await titles(admin, "/api/notes", "title", A) == []
    assert await titles(admin, "/api/notes", "title", B) == ["ramen page"]
    edited = await admin.patch(f"/api/notes/{page['id']}", {"content": "moved body"})
    assert edited.json["space_id"] == B and edited.json["content"] == "moved body"

    (entry,) = (await admin.get("/api/memory/knowledge", params={"space": A})).json["items"]
    (old_file,) = files_of(admin, "guild_100")
    given = await admin.post(f"/api/memory/knowledge/{entry['id']}/move", {"space_id": B})
    assert given.status == 200, given.text
    assert given.json["space_id"] == B
    assert files_of(admin, "guild_100") == [] and not old_file.exists()
    (new_file,) = files_of(admin, "guild_200")
    assert given.json["md_path"] == f"web_search/guild_200/{new_file.name}"
    assert "ramen weather" in new_file.read_text(encoding="utf-8")
    assert await titles(admin, "/api/memory/knowledge", "title", B) == ["ramen weather"]

    missing = await admin.post("/api/notes/99999/move", {"space_id": B})
    assert missing.status == 404
    bad = await admin.post(f"/api/notes/{page['id']}/move", {"space_id": "somewhere"})
    assert bad.status == 422


async def test_create_note_goes_to_the_named_space_or_the_local_one(admin: Admin) -> None:
    local = await admin.post("/api/notes", {"title": "home"})
    assert local.status == 201 and local.json["space_id"] == LOCAL
    there = await admin.post("/api/notes", {"title": "home", "space_id": A})
    assert there.status == 201 and there.json["space_id"] == A
    renamed = await admin.post(
        "/api/notes/sections/rename", {"old": "", "new": "top", "space_id": A}
    )
    assert renamed.json == {"renamed": 1}
    sections = {p["space_id"]: p["section"] for p in (await admin.get("/api/notes")).json["pages"]}
    assert sections == {A: "top", LOCAL: ""}


async def test_admin_chat_runs_in_the_space_it_names_and_logs_carry_it(admin: Admin) -> None:
    await admin.services.notes.create(A, "ramen page", "the shop opens at noon")
    await admin.services.notes.create(B, "camera page", "lens secrets")
    admin.llm.script(Text("Noted."))
    reply = await admin.post("/api/chat/stream", {"message": "hello", "space_id": A})
    assert reply.status == 200, reply.text
    session_id = sse_events(reply.text)[0]["value"]
    session = (await admin.get(f"/api/sessions/{session_id}")).json
    assert session["space_id"] == A
    sent = str(admin.llm.chat_requests[-1].messages)
    assert "ramen page" in sent and "camera page" not in sent

    logs_a = await admin.get("/api/logs", params={"space": A})
    assert logs_a.json["items"] and {row["space_id"] for row in logs_a.json["items"]} == {A}
    logs_b = await admin.get("/api/logs", params={"space": B})
    assert logs_b.json["items"] == []

    other = await admin.post(
        "/api/chat/stream", {"message": "again", "session_id": session_id, "space_id": B}
    )
    assert other.status == 422 and A in other.json["detail"]
    same = await admin.post("/api/chat/stream", {"message": "again", "session_id": session_id})
    assert same.status == 200
