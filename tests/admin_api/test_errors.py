"""Every failure is JSON {error, detail} with the right status; nothing internal leaks."""

from __future__ import annotations

import logging

import aiohttp
import pytest
from aiohttp import web

from admin_api import create_app
from tests.admin_api.conftest import TOKEN, Admin


async def test_malformed_bodies_and_parameters(admin: Admin) -> None:
    json_header = {"Content-Type": "application/json"}
    cases = [
        (await admin.call("POST", "/api/notes", data=b"{not json", headers=json_header), 400),
        (await admin.call("POST", "/api/notes", data=b"", headers=json_header), 400),
        (
            await admin.call(
                "POST", "/api/notes", data=b'{"title": "\\ud800"}', headers=json_header
            ),
            400,
        ),
        (await admin.call("POST", "/api/notes", data=b"\xff\xfe", headers=json_header), 400),
        (await admin.post("/api/notes", {"title": "ok", "colour": "red"}), 422),
        (await admin.post("/api/notes", ["not", "an", "object"]), 422),
        (await admin.get("/api/notes/abc"), 422),
        (await admin.get("/api/notes/0"), 422),
        (await admin.get(f"/api/notes/{2**70}"), 422),
        (await admin.get("/api/logs", params={"limit": "0"}), 422),
        (await admin.get("/api/logs", params={"limit": "many"}), 422),
        (await admin.get("/api/logs", params={"since": "0001-01-01T00:00:00+01:00"}), 422),
        (await admin.get("/api/sessions/bad%20id"), 422),
        (await admin.get("/api/nowhere"), 404),
        (await admin.call("PATCH", "/api/settings", json_body={}), 405),
    ]
    for reply, status in cases:
        assert reply.status == status, (status, reply.text)
        assert reply.headers["Content-Type"].startswith("application/json")
        body = reply.json
        assert set(body) == {"error", "detail"} and body["detail"], body
    method_not_allowed = cases[-1][0]
    assert "GET" in method_not_allowed.headers["Allow"]
    extra = cases[4][0].json
    assert extra["error"] == "validation_error" and "colour" in extra["detail"]


async def test_unexpected_failure_is_a_generic_500(
    admin: Admin, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(admin.services, config=admin.config)

    async def boom(request: web.Request) -> web.Response:
        raise RuntimeError("internal detail /var/db password=hunter2")

    app.router.add_get("/api/boom", boom)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(
                f"http://127.0.0.1:{port}/api/boom", headers={"Authorization": f"Bearer {TOKEN}"}
            ) as response,
        ):
            assert response.status == 500
            body = await response.json()
    finally:
        await runner.cleanup()
    assert body == {"error": "internal_error", "detail": "Internal server error."}
    errors = [
        r for r in caplog.records if r.levelno >= logging.ERROR and r.name.startswith("admin_api")
    ]
    assert errors and "GET /api/boom" in errors[0].getMessage()
