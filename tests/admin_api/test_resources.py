"""Logs, memory, model presets, system and topics routes over a real socket."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.store.repos.knowledge import KnowledgeRepository, KnowledgeSource
from tests.admin_api.conftest import Admin, StartAdmin
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text


async def add_log(
    admin: Admin, *, session_id: str | None, model: str, error: str | None = None
) -> int:
    return await admin.services.repos.api_logs.add(
        session_id=session_id,
        model=model,
        purpose="chat",
        request_json='{"messages": []}',
        response_text=None if error else "ok",
        error=error,
        latency_ms=5,
    )


async def test_logs_filter_page_detail_and_delete(admin: Admin) -> None:
    ids = []
    for n in range(5):
        ids.append(await add_log(admin, session_id="s1" if n % 2 else "s2", model=f"m{n % 2}"))
    failed = await add_log(admin, session_id="s1", model="m1", error="boom")

    first = await admin.get("/api/logs", params={"limit": "2"})
    assert [item["id"] for item in first.json["items"]] == [failed, ids[4]]
    assert "request_json" not in first.json["items"][0], "listing stays light"
    second = await admin.get(
        "/api/logs", params={"limit": "2", "cursor": str(first.json["next_cursor"])}
    )
    assert [item["id"] for item in second.json["items"]] == [ids[3], ids[2]]

    by_session = await admin.get("/api/logs", params={"session_id": "s1"})
    assert [item["id"] for item in by_session.json["items"]] == [failed, ids[3], ids[1]]
    by_model = await admin.get("/api/logs", params={"model": "m0"})
    assert [item["id"] for item in by_model.json["items"]] == [ids[4], ids[2], ids[0]]
    errors = await admin.get("/api/logs", params={"errors_only": "true"})
    assert [(item["id"], item["error"]) for item in errors.json["items"]] == [(failed, "boom")]
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert (await admin.get("/api/logs", params={"since": future})).json["items"] == []
    assert len((await admin.get("/api/logs", params={"until": future})).json["items"]) == 6
    naive_past = (datetime.now(UTC) - timedelta(hours=1)).replace(tzinfo=None).isoformat()
    assert len((await admin.get("/api/logs", params={"since": naive_past})).json["items"]) == 6
    assert (await admin.get("/api/logs", params={"since": "yesterday"})).status == 422

    detail = await admin.get(f"/api/logs/{failed}")
    assert detail.json["request_json"] == '{"messages": []}' and detail.json["error"] == "boom"
    assert (await admin.get("/api/logs/999999")).status == 404

    assert (await admin.delete(f"/api/logs/{ids[0]}")).json == {"deleted": 1}
    assert (await admin.delete(f"/api/logs/{ids[0]}")).status == 404
    refused = await admin.delete("/api/logs")
    assert refused.status == 422 and "all=true" in refused.json["detail"]
    assert (await admin.delete("/api/logs", params={"session_id": "s1"})).json == {"deleted": 3}
    assert (await admin.delete("/api/logs", params={"all": "true"})).json == {"deleted": 2}
    assert (await admin.get("/api/logs")).json == {"items": [], "next_cursor": None}


async def test_memory_summaries_and_knowledge(admin: Admin) -> None:
    repos = admin.services.repos
    session = await repos.sessions.create(LOCAL, title="t")
    message = await repos.messages.add(LOCAL, session.id, "user", "hello")
    memory = await repos.memories.summarize_messages(LOCAL, session.id, [message.id], "greeting")
    assert memory is not None
    listed = await admin.get("/api/memory/summaries")
    assert [(item["id"], item["summary"]) for item in listed.json["items"]] == [
        (memory.id, "greeting")
    ]
    mine = await admin.get("/api/memory/summaries", params={"session_id": session.id})
    assert len(mine.json["items"]) == 1
    assert (await admin.delete(f"/api/memory/summaries/{memory.id}")).json == {"deleted": 1}
    assert (await admin.delete(f"/api/memory/summaries/{memory.id}")).status == 404
    kept = await repos.messages.get(LOCAL, message.id)
    assert kept is not None and kept.archived_at is not None, "history stays archived"

    knowledge = KnowledgeRepository(admin.services.db)
    entries = [
        await knowledge.add(
            LOCAL if n else "guild:9",
            query=f"q{n}",
            title=f"T{n}",
            summary="s",
            session_id=None,
            md_path=None,
            sources=[KnowledgeSource("Example", "https://example.com/")],
        )
        for n in range(3)
    ]
    page = await admin.get("/api/memory/knowledge", params={"limit": "2"})
    assert [item["title"] for item in page.json["items"]] == ["T2", "T1"]
    rest = await admin.get(
        "/api/memory/knowledge", params={"cursor": str(page.json["next_cursor"])}
    )
    assert [item["title"] for item in rest.json["items"]] == ["T0"]
    one = await admin.get(f"/api/memory/knowledge/{entries[0].id}")
    assert one.json["sources"] == [{"title": "Example", "url": "https://example.com/"}]
    assert (await admin.delete(f"/api/memory/knowledge/{entries[0].id}")).json == {"deleted": 1}
    assert (await admin.get(f"/api/memory/knowledge/{entries[0].id}")).status == 404
    assert (await admin.delete(f"/api/memory/knowledge/{entries[0].id}")).status == 404


async def test_model_presets_and_available_models(admin: Admin) -> None:
    created = await admin.post(
        "/api/models/presets", {"label": "Qwen 8B", "value": "ollama/qwen3:8b"}
    )
    assert created.status == 201
    preset_id = created.json["id"]
    duplicate = await admin.post(
        "/api/models/presets", {"label": "again", "value": "ollama/qwen3:8b"}
    )
    assert duplicate.status == 409
    other = await admin.post("/api/models/presets", {"label": "GPT", "value": "openai/gpt-4o"})
    clash = await admin.patch(
        f"/api/models/presets/{other.json['id']}", {"value": "ollama/qwen3:8b"}
    )
    assert clash.status == 409
    renamed = await admin.patch(f"/api/models/presets/{preset_id}", {"label": "Qwen"})
    assert (renamed.json["label"], renamed.json["value"]) == ("Qwen", "ollama/qwen3:8b")
    listed = await admin.get("/api/models/presets")
    # The configured model was added as the first preset when the services started.
    assert [p["label"] for p in listed.json["presets"]] == ["test-model", "Qwen", "GPT"]
    assert (await admin.delete(f"/api/models/presets/{preset_id}")).json == {"deleted": 1}
    assert (await admin.patch(f"/api/models/presets/{preset_id}", {"label": "x"})).status == 404
    assert (await admin.post("/api/models/presets", {"label": "", "value": "x"})).status == 422

    available = await admin.get("/api/models/available")
    assert available.status == 200
    assert available.json["current"] == "ollama/test-model"
    assert set(available.json["models"]) == {"ollama/test-model", "ollama/other-model"}


async def test_system_stats_word_pool_and_backfill(admin: Admin) -> None:
    admin.llm.script(Text("東京の天気は晴れです。"))
    await admin.post("/api/chat/stream", {"message": "京都の紅葉について教えて"})
    await admin.services.tasks.drain()
    stats = (await admin.get("/api/system/stats")).json
    assert (stats["sessions"], stats["messages"], stats["api_calls"]) == (1, 2, 1)
    assert stats["db_bytes"] > 0
    words = (await admin.get("/api/system/word-pool")).json["words"]
    assert words == [], "a chat outside a topic channel feeds no channel's pool"
    await admin.services.topics.configure(77, {"enabled": True}, space="guild:5")
    await admin.services.topics.record_activity("guild:5", 77, "京都の紅葉と東京の天気")
    words = (await admin.get("/api/system/word-pool")).json["words"]
    assert "紅葉" in words and "天気" in words, "the operator sees every space's pools"

    session = await admin.services.repos.sessions.create(LOCAL, title="t")
    await admin.services.repos.messages.add(LOCAL, session.id, "user", "富士山の写真を撮りました")
    backfill = await admin.post("/api/system/tags/backfill", {"limit": 10})
    assert backfill.json == {"tagged": 1}
    assert (await admin.post("/api/system/tags/backfill", {})).json == {"tagged": 0}
    assert (await admin.post("/api/system/tags/backfill", {"limit": 0})).status == 422


async def test_topic_schedules_and_run_now(start_admin: StartAdmin) -> None:
    rebuilt: list[int] = []

    async def rebuild() -> None:
        rebuilt.append(1)

    admin = await start_admin()
    admin.services.topics.add_change_listener(rebuild)  # what a running TopicScheduler does
    assert (await admin.get("/api/topics")).json == {"channels": []}
    assert (await admin.get("/api/topics/42")).status == 404

    put = await admin.put(
        "/api/topics/42",
        {"enabled": True, "idle_minutes": 30, "timezone": "Asia/Tokyo", "cron": "0 9 * * *"},
    )
    assert put.status == 200, put.text
    channel = put.json["channel"]
    assert (channel["enabled"], channel["idle_minutes"], channel["timezone"], channel["cron"]) == (
        True,
        30,
        "Asia/Tokyo",
        "0 9 * * *",
    )
    assert isinstance(put.json["would_post"], bool) and put.json["reason"]
    cleared = await admin.put("/api/topics/42", {"cron": None})
    assert cleared.json["channel"]["cron"] is None
    assert cleared.json["channel"]["idle_minutes"] == 30, "omitted fields stay"
    for bad in (
        {"timezone": "Mars/Olympus"},
        {"cron": "every day"},
        {"active_start": "25:00"},
        {"enabled": None},
        {"idle_minutes": 0},
        {"nope": 1},
    ):
        reply = await admin.put("/api/topics/42", bad)
        assert reply.status == 422, bad
    assert [c["channel_id"] for c in (await admin.get("/api/topics")).json["channels"]] == ["42"]
    assert len(rebuilt) == 2, "the scheduler re-reads after each accepted change"

    run = await admin.post("/api/topics/42/run")
    assert run.status == 200
    assert run.json["posted"] is False and "not connected" in run.json["reason"]


async def test_tools_lists_builtins_and_mcp_state(start_admin: StartAdmin, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"off": {"command": "true", "enabled": False}}}), "utf-8"
    )
    admin = await start_admin(mcp_config=config)
    listing = await admin.get("/api/tools")
    assert listing.status == 200
    sources = {tool["name"]: tool["source"] for tool in listing.json["tools"]}
    assert sources["read_note"] == "builtin" and sources["write_note"] == "builtin"
    (server,) = listing.json["mcp_servers"]
    assert (server["name"], server["state"], server["tools"]) == ("off", "disabled", [])
    assert listing.json["mcp_config_error"] is None
    assert (await admin.get("/api/tools", token=None)).status == 401
