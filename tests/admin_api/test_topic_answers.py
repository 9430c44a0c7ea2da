"""GET /api/topics: each channel's answer rate (openers answered within their reply window of
those sent, and those still waiting), per space."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.store.repos.topics import TopicRepository
from tests.admin_api.conftest import StartAdmin

A, B = "guild:1", "guild:2"


async def _post(repo: TopicRepository, space: str, channel: int, at: datetime) -> None:
    await repo.add_post(
        space,
        channel,
        kind="idle",
        topic="ラーメン",
        words=["ラーメン"],
        content="最近おいしいラーメン食べた？",
        discord_message_id=None,
        posted_at=at.isoformat(timespec="microseconds"),
    )


async def test_the_topic_list_shows_each_channels_answer_rate(start_admin: StartAdmin) -> None:
    admin = await start_admin()
    topics, repo = admin.services.topics, admin.services.repos.topics
    now = topics.now()
    await topics.configure(42, {"enabled": True}, space=A)
    await topics.configure(43, {"enabled": True}, space=B)
    await topics.configure(44, {"enabled": True}, space=A)
    for hours in (5, 4, 3):
        await _post(repo, A, 42, now - timedelta(hours=hours))
    await _post(repo, A, 42, now - timedelta(minutes=5))  # still in its 30-minute window
    await _post(repo, B, 43, now - timedelta(hours=2))
    # People wrote 10 minutes after the first and the third opener of channel 42.
    for hours in (5, 3):
        await topics.record_activity(A, 42, at=now - timedelta(hours=hours, minutes=-10))

    listing = await admin.get("/api/topics")
    assert listing.status == 200, listing.text
    rates = {c["channel_id"]: c["answers"] for c in listing.json["channels"]}
    assert rates == {
        "42": {"sent": 4, "answered": 2, "waiting": 1},
        "43": {"sent": 1, "answered": 0, "waiting": 0},
        "44": {"sent": 0, "answered": 0, "waiting": 0},
    }
    (first,) = [c for c in listing.json["channels"] if c["channel_id"] == "42"]
    assert [post["answered_at"] is not None for post in first["last_openers"]] == [
        False,
        True,
        False,
    ], "newest first: waiting, answered, unanswered"
    only_b = await admin.get("/api/topics", params={"space": B})
    assert [(c["channel_id"], c["answers"]["sent"]) for c in only_b.json["channels"]] == [("43", 1)]
    assert datetime.fromisoformat(first["last_openers"][1]["answered_at"]).tzinfo == UTC


async def test_quiet_hours_change_at_runtime_and_a_bad_value_is_refused_clearly(
    start_admin: StartAdmin,
) -> None:
    admin = await start_admin()
    topics = admin.services.topics
    await topics.configure(
        42, {"enabled": True, "active_start": "00:00", "active_end": "00:00"}, space=A
    )
    zoned = await admin.patch(f"/api/spaces/{A}", {"timezone": "Pacific/Kiritimati"})
    assert zoned.status == 200, zoned.text
    refused = await admin.put("/api/settings", {"values": {"topic_quiet_hours": "25-7"}})
    assert refused.status == 422, refused.text
    assert refused.json["fields"] == {
        "topic_quiet_hours": "topic_quiet_hours is not valid: '25-7' is not a time window: "
        'hours "START-END" such as "23-7" or "22:30-06:00" (24-hour clock).'
    }
    hour = datetime.now(ZoneInfo("Pacific/Kiritimati")).hour
    quiet = f"{(hour - 1) % 24}-{(hour + 2) % 24}"
    saved = await admin.put("/api/settings", {"values": {"topic_quiet_hours": quiet}})
    assert saved.status == 200, saved.text
    status = (await admin.get("/api/topics/42")).json
    assert (
        status["reason"].startswith("quiet hours ") and "(Pacific/Kiritimati)" in status["reason"]
    )
