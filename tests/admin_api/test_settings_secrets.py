"""Settings over HTTP: masking, masked values kept, live changes, and no secret ever leaks."""

from __future__ import annotations

import logging

import pytest

from bot.utils.log_setup import NOISY_LOGGERS
from tests.admin_api.conftest import API_KEY, PASSWORD, TOKEN, Admin, StartAdmin, sse_events
from tests.fakes.llm_server import Text

DISCORD_TOKEN = "MTIzNDU2Nzg5MDEyMzQ1Njc4.discord-SECRET-token-value-abcdef"
NEW_KEY = "sk-rotated-NEWSECRET-1a2b3c4d5e"


async def test_settings_mask_secrets_and_masked_put_keeps_them(start_admin: StartAdmin) -> None:
    admin = await start_admin("litellm", llm_api_key=API_KEY)
    got = await admin.get("/api/settings")
    assert got.status == 200
    assert got.json["values"]["llm_api_key"] == {"set": True, "last4": API_KEY[-4:]}
    assert "llm_api_key" in got.json["secret_keys"]
    assert API_KEY not in got.text

    for masked in ({"set": True, "last4": API_KEY[-4:]}, f"…{API_KEY[-4:]}", "••••"):
        put = await admin.put("/api/settings", {"values": {"llm_api_key": masked}})
        assert put.status == 200, put.text
        assert admin.services.settings().secret("llm_api_key") == API_KEY

    put = await admin.put("/api/settings", {"values": {"llm_api_key": NEW_KEY}})
    assert put.json["values"]["llm_api_key"] == {"set": True, "last4": NEW_KEY[-4:]}
    assert admin.services.settings().secret("llm_api_key") == NEW_KEY
    stored = await admin.services.repos.app_settings.all()
    assert stored["llm_api_key"] == NEW_KEY, "persisted for the next start"

    reset = await admin.put("/api/settings", {"values": {"llm_api_key": None}})
    assert reset.status == 200
    assert admin.services.settings().secret("llm_api_key") == API_KEY, "back to the .env value"


async def test_settings_change_reaches_the_running_engine(admin: Admin) -> None:
    put = await admin.put(
        "/api/settings", {"values": {"llm_model": "ollama/other-model", "language": "ja"}}
    )
    assert put.status == 200
    assert put.json["values"]["llm_model"] == "ollama/other-model"
    admin.llm.script(Text("やあ"))
    reply = await admin.post("/api/chat/stream", {"message": "hi"})
    assert sse_events(reply.text)[-1]["type"] == "done"
    assert admin.llm.chat_requests[-1].model == "other-model"


async def test_bad_settings_are_refused_without_echo(admin: Admin) -> None:
    before = admin.services.settings()
    unknown = await admin.put("/api/settings", {"values": {"db_path": "/etc/passwd"}})
    assert unknown.status == 422 and unknown.json["error"] == "validation_error"
    assert "/etc/passwd" not in unknown.text
    bad = await admin.put(
        "/api/settings", {"values": {"llm_context_tokens": "lots-SECRETISH", "language": "en"}}
    )
    assert bad.status == 422
    assert "SECRETISH" not in bad.text
    extra = await admin.put("/api/settings", {"values": {}, "oops": 1})
    assert extra.status == 422 and "oops" in extra.json["detail"]
    assert admin.services.settings() == before, "nothing applied"


async def test_no_stored_secret_in_any_response_or_log_line(
    start_admin: StartAdmin, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # aiosqlite's DEBUG lines print every SQL parameter; the entry points cap it at INFO
    # (bot.utils.log_setup.configure_logging), so the test does what a deployment does.
    for name in NOISY_LOGGERS:
        caplog.set_level(logging.INFO, logger=name)
    admin = await start_admin("litellm", llm_api_key=API_KEY, discord_token=DISCORD_TOKEN)
    origin = {"Origin": admin.origin}
    await admin.post(
        "/api/auth/login", {"password": "wrong " + PASSWORD}, token=None, headers=origin
    )
    await admin.post("/api/auth/login", {"password": PASSWORD}, token=None, headers=origin)
    await admin.get("/api/settings")
    await admin.put("/api/settings", {"values": {"llm_api_key": {"set": True, "last4": "x"}}})
    await admin.put("/api/settings", {"values": {"llm_api_key": 12345}})
    await admin.put("/api/settings", {"values": {"not_a_key": API_KEY}})
    await admin.put("/api/settings", {"values": {"discord_token": DISCORD_TOKEN}})
    admin.llm.script(Text("Sure, the answer is 42."))
    stream = await admin.post("/api/chat/stream", {"message": "what is the answer?"})
    session_id = sse_events(stream.text)[0]["value"]
    logs = await admin.get("/api/logs")
    assert logs.json["items"], "the LiteLLM call was logged"
    await admin.get(f"/api/logs/{logs.json['items'][0]['id']}")
    await admin.get(f"/api/sessions/{session_id}/export")
    await admin.get("/api/system/stats")
    await admin.get("/api/openapi.json")
    await admin.put("/api/settings", {"values": {"llm_api_key": NEW_KEY}})
    await admin.get("/api/settings")
    await admin.get("/api/auth/session")
    await admin.services.tasks.drain()

    secrets = (API_KEY, NEW_KEY, PASSWORD, TOKEN, DISCORD_TOKEN)
    assert len(admin.seen) >= 15
    for reply in admin.seen:
        for secret in secrets:
            assert secret not in reply.text, (secret, reply.text[:200])
            assert all(secret not in value for value in reply.headers.values())
    assert admin.llm.chat_requests[0].headers["Authorization"] == f"Bearer {API_KEY}"
    lines = [record.getMessage() for record in caplog.records]
    lines += [caplog.text]
    for line in lines:
        for secret in secrets:
            assert secret not in line, (secret, line[:300])
