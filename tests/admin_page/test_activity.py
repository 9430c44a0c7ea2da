"""The activity screen: charts over /api/activity that draw one point per bucket, latency per
model and tool use as tables, the range picker and the space picker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from playwright.async_api import expect

from bot.chat.engine import TurnRequest
from tests.admin_page.conftest import Ui
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text

QUIET = "guild:222222222222222222"


async def seed(ui: Ui) -> None:
    """Three LLM calls (one failed) and two tool calls in the local space, hours ago."""
    repos = ui.admin.services.repos
    session = await repos.sessions.create(LOCAL, title="activity")
    now = datetime.now(UTC)
    for hours, latency, error in ((2, 100, None), (2, 300, None), (5, 900, "timed out")):
        call = await repos.api_logs.add(
            session_id=session.id,
            model="ollama/test-model",
            purpose="chat",
            request_json="{}",
            response_text=None if error else "ok",
            error=error,
            latency_ms=latency,
            prompt_tokens=40,
            completion_tokens=10,
        )
        created = (now - timedelta(hours=hours)).isoformat(timespec="microseconds")
        await ui.admin.services.db.execute(
            "UPDATE api_logs SET created_at = ? WHERE id = ?", (created, call)
        )
    for n, ok in enumerate((True, False)):
        await repos.tool_calls.add(
            LOCAL,
            session.id,
            message_id=None,
            call_id=f"call-{n}",
            tool="web_search",
            arguments={"query": "kyoto"},
            ok=ok,
            error_text=None if ok else "no network",
            duration_ms=20,
        )


async def activity(ui: Ui, bucket: str) -> dict[str, Any]:
    reply = await ui.admin.get("/api/activity", params={"bucket": bucket})
    assert reply.status == 200, reply.text
    report: dict[str, Any] = reply.json
    return report


async def test_charts_draw_every_bucket_and_the_tables_show_models_and_tools(ui: Ui) -> None:
    await seed(ui)
    await ui.login()
    await ui.go("activity")
    report = await activity(ui, "hour")
    buckets = len(report["buckets"])
    assert buckets >= 48
    for chart in ("activity-turns", "activity-tokens", "activity-errors"):
        await expect(ui.page.locator(f"#{chart}")).to_have_attribute("data-points", str(buckets))
        rows = ui.page.locator(f"#{chart} .chart-table tbody tr")
        await expect(rows).to_have_count(buckets)
    await expect(ui.page.locator("#activity-turns")).to_contain_text("3 LLM calls")
    await expect(ui.page.locator("#activity-errors")).to_contain_text(
        "1 LLM error"
    )  # one: singular
    await expect(ui.page.locator("#activity-errors")).not_to_contain_text("1 LLM errors")
    await expect(ui.page.locator("#activity-tokens")).to_contain_text("120 prompt")

    model = ui.page.locator('#activity-models tr[data-model="ollama/test-model"]')
    await expect(model).to_contain_text("3")  # calls
    await expect(model).to_contain_text("300 ms")  # p50 of 100, 300, 900
    await expect(model).to_contain_text("900 ms")  # p95
    tool = ui.page.locator('#activity-tools tr[data-tool="web_search"]')
    await expect(tool).to_contain_text("2")
    await expect(tool).to_contain_text("20 ms")
    await ui.shoot("activity-hours")

    await ui.page.get_by_label("Range").select_option("day")
    days = len((await activity(ui, "day"))["buckets"])
    await expect(ui.page.locator("#activity-turns")).to_have_attribute("data-points", str(days))
    ui.assert_clean()


async def test_the_space_picker_filters_the_activity(ui: Ui) -> None:
    await seed(ui)
    await ui.admin.services.spaces.ensure(QUIET, "Quiet Club")
    await ui.login()
    await ui.go("activity")
    await expect(ui.page.locator("#activity-turns")).not_to_have_attribute("data-points", "0")
    await ui.page.locator("#space-select").select_option(QUIET)
    await expect(ui.page.locator("#activity-turns")).to_have_attribute("data-points", "0")
    await expect(ui.screen("activity")).to_contain_text("No activity in this range yet.")
    await expect(ui.page.locator("#activity-models")).to_contain_text("No model was called")
    ui.assert_clean()


async def test_the_token_budgets_show_each_space_and_member_today(ui: Ui) -> None:
    services = ui.admin.services
    await services.settings.update({"member_daily_tokens": 500})
    await services.spaces.ensure(QUIET, "Quiet Club")
    ui.admin.llm.script(Text("hi", prompt_tokens=30, completion_tokens=12))
    request = TurnRequest("hello", space_id=QUIET, author_id="77", source="discord")
    async for _ in services.engine.run_turn(request):
        pass
    await ui.login()
    await ui.go("activity")
    usage = ui.page.locator("#activity-usage")
    member = usage.locator(f'tr[data-space="{QUIET}"][data-member="77"]')
    await expect(member).to_contain_text("42 of 500")
    whole = usage.locator(f'tr[data-space="{QUIET}"][data-member=""]')
    await expect(whole).to_contain_text("Every member")
    await expect(whole).to_contain_text("Unlimited")
    await expect(whole).to_contain_text("Quiet Club")
    ui.assert_clean()
