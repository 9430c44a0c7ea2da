"""The owner's second day: the first start saved the default model as a connection; after
LLM_MODEL changes, that connection follows it, Status turns green, and the Connections and
Chat lists show the configured model first and marked."""

from __future__ import annotations

from pathlib import Path

import aiosqlite
import pytest

from bot.store.engine.migrate import migrate
from tests.admin_api.conftest import StartAdmin
from tests.ops.conftest import closed_port

DEFAULT = "ollama/qwen3:8b"
T = "2026-01-01T00:00:00.000000+00:00"


async def test_the_seeded_connection_follows_llm_model_and_status_turns_green(
    start_admin: StartAdmin,
) -> None:
    # Day one: the defaults; the seed lists the default model.
    first = await start_admin(llm_model=DEFAULT)
    listed = (await first.get("/api/models/presets")).json["presets"]
    assert [(p["value"], p["configured"], p["seeded"]) for p in listed] == [(DEFAULT, True, True)]
    # Day two: LLM_MODEL names the model that answers (a new process, the same database).
    second = await start_admin(llm_model="ollama/test-model")
    dead = f"http://127.0.0.1:{closed_port()}"
    made = await second.post(
        "/api/models/presets",
        {"label": "Spare", "value": "ollama/spare", "api_base": dead},
    )
    assert made.status == 201, made.text
    assert (await second.post("/api/readiness/check")).status == 200
    listed = (await second.get("/api/models/presets")).json["presets"]
    assert [(p["value"], p["configured"], p["state"]) for p in listed] == [
        ("ollama/test-model", True, "ok"),
        ("ollama/spare", False, "down"),
    ]
    assert listed[0]["id"] == 1, "the day-one connection, following LLM_MODEL"
    assert dead in listed[1]["warning"]
    status = (await second.get("/api/status")).json
    assert status["status"] == "ok", status
    connections = next(c for c in status["components"] if c["name"] == "connections")
    assert connections["state"] == "ok"
    assert "Not answering, used by nobody: Spare." in connections["detail"]

    # Changed on the Settings page: the configured model is listed at once.
    reply = await second.put("/api/settings", {"values": {"llm_model": "ollama/other"}})
    assert reply.status == 200
    await second.services.tasks.drain()
    listed = (await second.get("/api/models/presets")).json["presets"]
    assert (listed[0]["id"], listed[0]["value"], listed[0]["configured"]) == (
        1,
        "ollama/other",
        True,
    )


# The schema before `model_presets.seeded` (migration 9).
BEFORE_SEEDED = 8


@pytest.mark.sqlite_only(reason="builds an older SQLite file by hand")
async def test_an_upgraded_database_marks_the_first_seeded_connection(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        assert await migrate(conn, target=BEFORE_SEEDED) == BEFORE_SEEDED
        await conn.executescript(
            "INSERT INTO model_presets (label, value, created_at) VALUES "
            f"('qwen3:8b', '{DEFAULT}', '{T}'), ('llama3', 'ollama/llama3', '{T}');"
        )
        await migrate(conn)
        cursor = await conn.execute("SELECT value, seeded FROM model_presets ORDER BY id")
        assert [tuple(row) for row in await cursor.fetchall()] == [
            (DEFAULT, 1),
            ("ollama/llama3", 0),
        ]
    finally:
        await conn.close()
