"""GET /api/settings/startup: what only a restart changes (access lists, the admin binding…),
by topic, read-only, with every secret masked and Discord ids as strings."""

from __future__ import annotations

from bot.config import RUNTIME_KEYS, Settings
from tests.admin_api.conftest import PASSWORD, TOKEN, StartAdmin

BIG_USER = 1300000000000000848


async def test_startup_settings_by_topic_with_secrets_masked(start_admin: StartAdmin) -> None:
    admin = await start_admin(
        discord_allowed_user_ids=[BIG_USER, 7], discord_token="discord-SECRET-token-abcd"
    )
    reply = await admin.get("/api/settings/startup")
    assert reply.status == 200, reply.text
    groups = {group["id"]: group for group in reply.json["groups"]}
    assert list(groups) == ["model", "memory", "tools", "discord", "admin", "process"]
    shown = {s["key"]: s for group in groups.values() for s in group["settings"]}
    assert set(shown) == set(Settings.model_fields) - RUNTIME_KEYS, "every start-up setting once"
    assert not set(shown) & RUNTIME_KEYS

    allowed = shown["discord_allowed_user_ids"]
    assert allowed["value"] == [str(BIG_USER), "7"] and allowed["source"] == "env"
    assert allowed in groups["discord"]["settings"] and allowed["env"] == "DISCORD_ALLOWED_USER_IDS"
    assert groups["admin"]["settings"][1]["key"] == "admin_host"
    assert shown["admin_host"]["value"] == "127.0.0.1"
    for secret, plain in (
        ("discord_token", "discord-SECRET-token-abcd"),
        ("admin_password", PASSWORD),
        ("admin_token", TOKEN),
    ):
        assert shown[secret]["secret"] is True
        assert shown[secret]["value"] == {"set": True, "last4": plain[-4:]}
    assert "SECRET" not in reply.text and PASSWORD not in reply.text and TOKEN not in reply.text
    assert shown["database_url"]["value"]["set"] in (True, False)
