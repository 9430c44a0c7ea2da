"""GET /api/status and its live form GET /api/status/stream (server-sent events): readiness,
database size, the last backup (admin API download or CLI), version and uptime."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import jsonschema
import pytest

from bot.__main__ import backup as cli_backup
from bot.ops.readiness import Check
from bot.store.engine.backup import last_backup
from tests.admin_api.conftest import TOKEN, Admin, StartAdmin

AUTH = {"Authorization": f"Bearer {TOKEN}"}


class Snapshots:
    """The snapshots of one open status stream, each checked against the documented schema."""

    def __init__(self, response: aiohttp.ClientResponse, schema: dict[str, Any]) -> None:
        self.response = response
        self.validator = jsonschema.Draft202012Validator(schema)

    async def next(self) -> dict[str, Any]:
        """The next snapshot (comment lines skipped)."""
        while True:
            raw = await asyncio.wait_for(self.response.content.readuntil(b"\n\n"), 10)
            data = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
            if data:
                snapshot: dict[str, Any] = json.loads(data[0])
                self.validator.validate(snapshot)
                return snapshot

    async def until(self, wanted: Any) -> dict[str, Any]:
        """Snapshots until one for which `wanted(snapshot)` holds."""
        while not wanted(snapshot := await self.next()):
            pass
        return snapshot


def component(snapshot: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in snapshot["components"] if c["name"] == name)


async def status_schema(admin: Admin) -> dict[str, Any]:
    """StatusOut from the OpenAPI document, its references resolvable."""
    document = (await admin.get("/api/openapi.json")).json
    schemas = document["components"]["schemas"]
    return {**schemas["StatusEvent"], "components": {"schemas": schemas}}


@asynccontextmanager
async def stream(admin: Admin) -> AsyncIterator[Snapshots]:
    schema = await status_schema(admin)
    async with admin.http.get(admin.url + "/api/status/stream", headers=AUTH) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/event-stream")
        yield Snapshots(response, schema)


async def test_status_needs_a_login_and_says_everything_at_once(admin: Admin) -> None:
    assert (await admin.get("/api/status", token=None)).status == 401
    assert (await admin.get("/api/status/stream", token=None)).status == 401
    reply = await admin.get("/api/status")
    assert reply.status == 200
    status = reply.json
    names = [c["name"] for c in status["components"]]
    assert names == [
        "discord",
        "model",
        "connections",
        "embeddings",
        "database",
        "settings",
        "mcp",
        "scheduler",
    ]
    assert status["db_bytes"] > 0
    assert status["last_backup"] is None
    assert status["version"] == "0.1.0"
    assert status["uptime_seconds"] >= 0 and status["started_at"]
    assert status["shards"] is None


@pytest.mark.sqlite_only(reason="backs up the DB_PATH file (API and CLI); PostgreSQL is pg_dump's")
async def test_a_backup_through_the_api_or_the_cli_is_remembered(
    admin: Admin, tmp_path: Path
) -> None:
    async with admin.http.get(admin.url + "/api/backup", headers=AUTH) as response:
        assert response.status == 200
        await response.read()
    after_download = (await admin.get("/api/status")).json["last_backup"]
    assert after_download["how"] == "api"
    assert after_download["target"].startswith("playchat-")

    settings = admin.services.settings()
    assert cli_backup(settings, str(tmp_path / "copy.db")) == 0
    record = last_backup(settings.db_path)
    assert record is not None and record.how == "cli"
    assert record.target == str(tmp_path / "copy.db")
    assert (await admin.get("/api/status")).json["last_backup"]["how"] == "cli"


async def test_the_stream_sends_a_snapshot_at_once_and_again_when_readiness_changes(
    admin: Admin,
) -> None:
    readiness = admin.services.readiness
    async with stream(admin) as snapshots:
        first = await snapshots.next()
        assert component(first, "model")["state"] == "unknown"
        await readiness.record("model", Check("down", "The model server is gone.", error="boom"))
        down = await snapshots.until(lambda s: component(s, "model")["state"] == "down")
        assert component(down, "model")["last_error"] == "boom"
        assert down["status"] == "down"
        # Still down for another reason: no change of state, but the report changed.
        await readiness.record("model", Check("down", "Another reason.", error="again"))
        again = await snapshots.until(
            lambda s: component(s, "model")["detail"] == "Another reason."
        )
        assert component(again, "model")["last_error"] == "again"


async def test_an_open_stream_does_not_hold_up_shutdown(start_admin: StartAdmin) -> None:
    admin = await start_admin()
    async with stream(admin) as snapshots:
        await snapshots.next()
        started = time.monotonic()
        await admin.server.close()
        assert time.monotonic() - started < admin.config.shutdown_timeout


async def test_a_stored_setting_that_is_not_json_is_reported_not_fatal(admin: Admin) -> None:
    db = admin.services.db
    await db.execute(
        "INSERT INTO app_settings (key, value, updated_at) VALUES (?, ?, ?)",
        ("system_prompt_extra", "{oops", "2026-12-07T00:00:00+00:00"),
    )
    await admin.services.settings.reload()
    await admin.services.readiness.check(["settings"])
    status = (await admin.get("/api/status")).json
    settings = component(status, "settings")
    assert settings["state"] == "degraded" and "SYSTEM_PROMPT_EXTRA" in settings["detail"]
    shown = (await admin.get("/api/settings")).json
    assert set(shown["skipped"]) == {"system_prompt_extra"}
    assert "not valid JSON" in shown["skipped"]["system_prompt_extra"]
    # Set again through the API: in effect, and Status is well again.
    await admin.put("/api/settings", {"values": {"system_prompt_extra": "Be kind."}})
    await admin.services.readiness.check(["settings"])
    assert (await admin.get("/api/settings")).json["skipped"] == {}
    assert component((await admin.get("/api/status")).json, "settings")["state"] == "ok"
