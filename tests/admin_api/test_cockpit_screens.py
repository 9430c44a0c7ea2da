"""The small endpoints behind the cockpit screens: a channel's words and tags, a space's
default model."""

from __future__ import annotations

from tests.admin_api.conftest import Admin

GUILD = "guild:1234567890123456789"
CHANNEL = 1200000000000000001
OTHER = 1200000000000000002


async def test_a_channel_shows_its_word_pool_and_recent_tags(admin: Admin) -> None:
    repos = admin.services.repos
    await repos.word_pool.add(GUILD, CHANNEL, ["ラーメン", "ラーメン", "京都"], keep=50)
    await repos.word_pool.add(GUILD, OTHER, ["カメラ"], keep=50)
    session = await repos.sessions.create(
        GUILD, title="t", source="discord", discord_channel_id=CHANNEL
    )
    message = await repos.messages.add(GUILD, session.id, "user", "ラーメン食べたい")
    await repos.tags.add_message_tags(GUILD, message.id, ["ラーメン", "食事"])

    reply = await admin.get(
        "/api/system/channel-words", params={"space": GUILD, "channel": str(CHANNEL)}
    )
    assert reply.status == 200, reply.text
    body = reply.json
    assert body["channel_id"] == str(CHANNEL)
    assert {w["word"]: w["count"] for w in body["words"]} == {"ラーメン": 2, "京都": 1}
    assert sorted(body["tags"]) == ["ラーメン", "食事"]

    other = (
        await admin.get("/api/system/channel-words", params={"space": GUILD, "channel": str(OTHER)})
    ).json
    assert [w["word"] for w in other["words"]] == ["カメラ"] and other["tags"] == []
    huge = await admin.get(
        "/api/system/channel-words", params={"space": GUILD, "channel": "9" * 20}
    )
    assert (huge.status, huge.json["words"]) == (200, [])
    assert (await admin.get("/api/system/channel-words", params={"space": GUILD})).status == 422


async def test_a_space_picks_its_default_model_among_the_connections(admin: Admin) -> None:
    await admin.services.spaces.ensure(GUILD, "Ramen Club")
    created = await admin.post(
        "/api/models/presets", {"label": "Local", "value": "ollama/qwen3:8b"}
    )
    assert created.status == 201, created.text

    unknown = await admin.patch(f"/api/spaces/{GUILD}", {"default_model": "ollama/nope"})
    assert unknown.status == 422 and "default_model" in unknown.json["detail"]
    chosen = await admin.patch(f"/api/spaces/{GUILD}", {"default_model": "ollama/qwen3:8b"})
    assert chosen.status == 200, chosen.text
    assert chosen.json["default_model"] == "ollama/qwen3:8b"
    record = await admin.services.spaces.get(GUILD)
    assert record is not None and record.default_model == "ollama/qwen3:8b"
    cleared = await admin.patch(f"/api/spaces/{GUILD}", {"default_model": None})
    assert cleared.json["default_model"] is None
    missing = await admin.patch("/api/spaces/guild:5", {"default_model": None})
    assert missing.status == 404


async def test_a_space_gets_its_own_time_zone_and_keeps_its_model(admin: Admin) -> None:
    await admin.services.spaces.ensure(GUILD, "Ramen Club")
    await admin.post("/api/models/presets", {"label": "Local", "value": "ollama/qwen3:8b"})
    await admin.patch(f"/api/spaces/{GUILD}", {"default_model": "ollama/qwen3:8b"})

    for bad in ("Mars/Olympus", "../etc/passwd", "/etc/localtime"):
        refused = await admin.patch(f"/api/spaces/{GUILD}", {"timezone": bad})
        assert refused.status == 422 and "timezone" in refused.json["detail"], bad
    zoned = await admin.patch(f"/api/spaces/{GUILD}", {"timezone": "Asia/Tokyo"})
    assert zoned.status == 200, zoned.text
    assert (zoned.json["timezone"], zoned.json["default_model"]) == (
        "Asia/Tokyo",
        "ollama/qwen3:8b",
    )
    # The zone budgets' days and recall's times read is the one the owner set.
    assert await admin.services.repos.token_usage.timezone(GUILD) == "Asia/Tokyo"
    listed = (await admin.get("/api/spaces")).json["spaces"]
    assert [space["timezone"] for space in listed if space["id"] == GUILD] == ["Asia/Tokyo"]

    model_only = await admin.patch(f"/api/spaces/{GUILD}", {"default_model": None})
    assert model_only.json["timezone"] == "Asia/Tokyo", "a field left out stays"
    cleared = await admin.patch(f"/api/spaces/{GUILD}", {"timezone": None})
    assert cleared.json["timezone"] is None
    assert await admin.services.repos.token_usage.timezone(GUILD) is None
