"""Shared notes over HTTP: CRUD, sections, reorder validation, per-session links."""

from __future__ import annotations

from typing import Any

from admin_api import create_app, route_table
from tests.admin_api.conftest import Admin
from tests.conftest import LOCAL


async def make_pages(admin: Admin, *specs: tuple[str, str]) -> list[dict[str, Any]]:
    pages = []
    for title, section in specs:
        reply = await admin.post(
            "/api/notes", {"title": title, "content": f"about {title}", "section": section}
        )
        assert reply.status == 201, reply.text
        pages.append(reply.json)
    return pages


async def titles(admin: Admin) -> list[tuple[str, str]]:
    pages = (await admin.get("/api/notes")).json["pages"]
    return [(page["title"], page["section"]) for page in pages]


async def test_note_crud(admin: Admin) -> None:
    (page,) = await make_pages(admin, ("Plan", ""))
    assert (await admin.get(f"/api/notes/{page['id']}")).json["content"] == "about Plan"
    patched = await admin.patch(
        f"/api/notes/{page['id']}", {"title": "Plan B", "content": "new", "section": "Work"}
    )
    assert patched.status == 200
    assert (patched.json["title"], patched.json["content"], patched.json["section"]) == (
        "Plan B",
        "new",
        "Work",
    )
    duplicate = await admin.post("/api/notes", {"title": "Plan B"})
    assert duplicate.status == 409 and duplicate.json["error"] == "conflict"
    assert (await admin.post("/api/notes", {"title": "  "})).status == 422
    assert (await admin.post("/api/notes", {"title": "x" * 101})).status == 422
    assert (await admin.delete(f"/api/notes/{page['id']}")).json == {"deleted": 1}
    assert (await admin.get(f"/api/notes/{page['id']}")).status == 404
    assert (await admin.delete(f"/api/notes/{page['id']}")).status == 404
    assert (await admin.patch(f"/api/notes/{page['id']}", {"title": "y"})).status == 404


async def test_rename_section(admin: Admin) -> None:
    await make_pages(admin, ("A", "Todo"), ("B", "Todo"), ("C", ""))
    reply = await admin.post("/api/notes/sections/rename", {"old": "Todo", "new": "Done"})
    assert reply.json == {"renamed": 2}
    assert await titles(admin) == [("A", "Done"), ("B", "Done"), ("C", "")]
    missing = await admin.post("/api/notes/sections/rename", {"old": "Nope", "new": "X"})
    assert missing.status == 404


async def test_reorder_is_validated_against_the_full_id_set(admin: Admin) -> None:
    a, b, c = await make_pages(admin, ("A", ""), ("B", ""), ("C", ""))
    before = await titles(admin)
    for order in (
        [a["id"], b["id"]],  # one missing
        [a["id"], b["id"], c["id"], 999],  # one unknown
        [a["id"], a["id"], b["id"], c["id"]],  # duplicated
        [],
    ):
        reply = await admin.post(
            "/api/notes/reorder", {"page_id": a["id"], "section": "", "order": order}
        )
        assert reply.status == 422, order
        assert reply.json["error"] == "validation_error"
        assert await titles(admin) == before, "nothing changed"
    moved_b = await admin.post(
        "/api/notes/reorder",
        {"page_id": b["id"], "section": "S", "order": [a["id"], c["id"], b["id"]]},
    )
    assert moved_b.status == 200, "B alone at the end in S splits nothing"
    bad_split = await admin.post(
        "/api/notes/reorder",
        {"page_id": c["id"], "section": "S", "order": [b["id"], a["id"], c["id"]]},
    )
    assert bad_split.status == 422 and "split" in bad_split.json["detail"]
    moved = await admin.post(
        "/api/notes/reorder",
        {"page_id": a["id"], "section": "S", "order": [c["id"], b["id"], a["id"]]},
    )
    assert moved.status == 200
    assert [(p["title"], p["section"]) for p in moved.json["pages"]] == [
        ("C", ""),
        ("B", "S"),
        ("A", "S"),
    ]
    not_ints = await admin.post(
        "/api/notes/reorder", {"page_id": a["id"], "section": "", "order": ["x"]}
    )
    assert not_ints.status == 422


async def test_session_note_links(admin: Admin) -> None:
    a, b = await make_pages(admin, ("A", ""), ("B", ""))
    session = await admin.services.repos.sessions.create(LOCAL, title="t")
    path = f"/api/sessions/{session.id}/notes"
    assert (await admin.get(path)).json == {"session_id": session.id, "page_ids": []}
    put = await admin.put(path, {"page_ids": [b["id"], a["id"], b["id"]]})
    assert put.status == 200
    assert sorted(put.json["page_ids"]) == sorted([a["id"], b["id"]])
    assert (await admin.put(path, {"page_ids": [12345]})).status == 422
    assert sorted((await admin.get(path)).json["page_ids"]) == sorted([a["id"], b["id"]])
    assert (await admin.get("/api/sessions/nosuchsession/notes")).status == 404
    assert (await admin.put("/api/sessions/nosuchsession/notes", {"page_ids": []})).status == 404


async def test_every_route_group_is_always_registered_and_documented(admin: Admin) -> None:
    spec = (await admin.get("/api/openapi.json")).json
    for prefix in (
        "/api/notes",
        "/api/topics",
        "/api/memory/knowledge",
        "/api/system/tags/backfill",
        "/api/system/word-pool",
    ):
        assert any(path.startswith(prefix) for path in spec["paths"]), prefix
    app = create_app(admin.services, config=admin.config)
    registered = {route.name for route in app.router.routes()}
    assert {route.name for route in route_table()} <= registered
    assert {"list_notes", "list_topic_channels", "list_knowledge", "word_pool"} <= registered
