"""GET /api/usage: the day's tokens per space and member, with the daily budgets."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.chat.engine import TurnRequest
from tests.admin_api.conftest import Admin
from tests.fakes.llm_server import Text

GUILD = "guild:444444444444444444"
OTHER = "guild:555555555555555555"


async def _turn(admin: Admin, space: str, author: str) -> None:
    request = TurnRequest("hi", space_id=space, author_id=author, source="discord")
    async for _ in admin.services.engine.run_turn(request):
        pass


async def test_usage_shows_each_space_and_member_against_the_budgets(admin: Admin) -> None:
    await admin.services.settings.update({"member_daily_tokens": 500})
    admin.llm.script(
        Text("a", prompt_tokens=30, completion_tokens=10),
        Text("b", prompt_tokens=50, completion_tokens=20),
        Text("c", prompt_tokens=5, completion_tokens=5),
    )
    await _turn(admin, GUILD, "7")
    await _turn(admin, GUILD, "8")
    await _turn(admin, OTHER, "7")
    reply = await admin.get("/api/usage", params={"space": GUILD})
    assert reply.status == 200, reply.text
    assert reply.json == {
        "day": datetime.now(UTC).date().isoformat(),
        "member_daily_tokens": 500,
        "server_daily_tokens": 0,
        "spaces": [
            {
                "space_id": GUILD,
                "used": 110,
                "reserved": 0,
                "calls": 2,
                "members": [
                    {"member_id": "8", "used": 70, "reserved": 0, "calls": 1},
                    {"member_id": "7", "used": 40, "reserved": 0, "calls": 1},
                ],
            }
        ],
    }
    every = (await admin.get("/api/usage")).json
    assert [space["space_id"] for space in every["spaces"]] == [GUILD, OTHER]
    earlier = await admin.get("/api/usage", params={"day": "2020-01-01"})
    assert earlier.json["spaces"] == [] and earlier.json["day"] == "2020-01-01"
    assert (await admin.get("/api/usage", params={"day": "yesterday"})).status == 422
