"""Logs on the page: filters, paging, detail with request and response, delete by filter."""

from __future__ import annotations

import json

from playwright.async_api import expect

from tests.admin_page.conftest import Ui

OK_CALLS = 53


async def seed_logs(ui: Ui) -> None:
    logs = ui.admin.services.repos.api_logs
    for n in range(OK_CALLS):
        await logs.add(
            session_id="s-ok",
            model="ollama/test-model",
            purpose="chat",
            request_json=json.dumps({"messages": [{"role": "user", "content": f"hello {n}"}]}),
            response_text=f"answer {n}",
            error=None,
            latency_ms=100 + n,
            prompt_tokens=10 + n,
            completion_tokens=5,
            cost=0.0012,
        )
    for n in range(2):
        await logs.add(
            session_id="s-bad",
            model="ollama/broken",
            purpose="summary",
            request_json=json.dumps({"messages": [{"role": "user", "content": "why"}]}),
            response_text=None,
            error=f"The model broke ({n})",
            latency_ms=7,
            prompt_tokens=12,
            completion_tokens=0,
            tokens_estimated=True,
        )


async def test_filter_errors_detail_paging_and_delete(ui: Ui) -> None:
    await seed_logs(ui)
    await ui.login()
    await ui.go("logs")
    screen = ui.screen("logs")
    rows = ui.page.locator("#log-table tbody tr")
    await expect(rows).to_have_count(50)
    older = ui.page.get_by_role("button", name="Older →")
    newer = ui.page.get_by_role("button", name="← Newer")
    await expect(newer).to_be_disabled()
    await older.click()
    await expect(rows).to_have_count(OK_CALLS + 2 - 50)
    await expect(ui.page.locator(".page-label")).to_have_text("Page 2")
    await expect(older).to_be_disabled()
    await newer.click()
    await expect(rows).to_have_count(50)

    await screen.get_by_label("Errors only").check()
    await ui.page.get_by_role("button", name="Apply filter").click()
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("Error: The model broke (1)")
    await expect(rows.nth(1)).to_contain_text("Error: The model broke (0)")
    await expect(rows.first).to_contain_text("≈ 12 / 0")  # PlayChat's estimate, marked
    await expect(ui.page.locator("#log-delete-matching")).to_have_text("Delete matching logs")
    await ui.shoot("logs")

    await rows.first.get_by_role("button").click()
    detail = ui.page.locator("#log-detail")
    await expect(detail).to_contain_text("ollama/broken")
    await expect(detail.locator("pre.log-request")).to_contain_text('"content": "why"')
    await expect(detail.locator("pre.log-response")).to_have_text("(none)")
    await expect(detail).to_contain_text("The model broke (1)")

    await screen.get_by_label("Errors only").uncheck()
    await screen.get_by_label("Session id").fill("s-ok")
    await screen.get_by_label("Model", exact=True).fill("ollama/test-model")
    await ui.page.get_by_role("button", name="Apply filter").click()
    await expect(detail).to_be_empty()
    await expect(rows).to_have_count(50)
    newest = rows.first
    await expect(newest).to_contain_text(f"{100 + OK_CALLS - 1} ms")
    await expect(newest).to_contain_text(f"{10 + OK_CALLS - 1} / 5")
    await expect(newest).to_contain_text("$0.0012")
    await newest.get_by_role("button").click()
    await expect(detail.locator("pre.log-response")).to_have_text(f"answer {OK_CALLS - 1}")
    await expect(detail.locator("pre.log-request")).to_contain_text(f"hello {OK_CALLS - 1}")

    # Delete only the errors, by filter; the ordinary calls stay.
    await screen.get_by_label("Session id").fill("")
    await screen.get_by_label("Model", exact=True).fill("")
    await screen.get_by_label("Errors only").check()
    await ui.page.get_by_role("button", name="Apply filter").click()
    await expect(rows).to_have_count(2)
    await ui.page.get_by_role("button", name="Delete matching logs").click()
    await ui.page.get_by_role("button", name="Really delete?").click()
    await expect(ui.status).to_contain_text("Deleted 2 logs.")
    await expect(rows).to_have_text(["No logs match. Clear the filter to see every call."])
    errors = await ui.api("GET", "/api/logs", params={"errors_only": "true"})
    assert errors["items"] == []
    everything = await ui.api("GET", "/api/logs", params={"limit": "200"})
    assert len(everything["items"]) == OK_CALLS
    ui.assert_clean()


async def test_delete_one_log_and_everything_needs_confirmation(ui: Ui) -> None:
    await seed_logs(ui)
    await ui.login()
    await ui.go("logs")
    screen = ui.screen("logs")
    rows = ui.page.locator("#log-table tbody tr")
    await rows.first.get_by_role("button").click()
    await ui.page.get_by_role("button", name="Delete this log").click()
    await ui.page.get_by_role("button", name="Really delete?").click()
    await expect(ui.status).to_contain_text("Log deleted.")
    remaining = await ui.api("GET", "/api/logs", params={"limit": "200"})
    assert len(remaining["items"]) == OK_CALLS + 1

    delete_all = ui.page.get_by_role("button", name="Delete all logs")
    await delete_all.click()
    await screen.get_by_label("Session id").focus()  # walking away disarms it
    await expect(delete_all).to_have_text("Delete all logs")
    assert len((await ui.api("GET", "/api/logs", params={"limit": "200"}))["items"]) == OK_CALLS + 1
    await delete_all.click()
    await ui.page.get_by_role("button", name="Really delete ALL logs?").click()
    await expect(ui.status).to_contain_text(f"Deleted {OK_CALLS + 1} logs.")
    assert (await ui.api("GET", "/api/logs"))["items"] == []
    ui.assert_clean()


async def test_logs_show_the_space_and_the_member_of_each_call(ui: Ui) -> None:
    services = ui.admin.services
    space = "guild:1300000000000000849"
    await services.spaces.ensure(space, "Tabletop Club")
    session = await services.repos.sessions.create(space, title="Dice")
    await services.repos.messages.add(
        space, session.id, "user", "roll", author_id="1300000000000000777", author_name="Mika"
    )
    call = await services.repos.api_logs.add(
        session_id=session.id,
        model="ollama/test-model",
        purpose="chat",
        request_json="{}",
        response_text="ok",
        error=None,
        latency_ms=9,
    )
    await ui.login()
    await ui.go("logs")
    headers = await ui.page.locator("#log-table thead th").all_inner_texts()
    assert headers[:3] == ["When", "Space", "Member"]
    row = ui.page.locator(f'#log-table tbody tr[data-id="{call}"]')
    await expect(row.locator("td.space")).to_have_text("Tabletop Club (guild:1300000000000000849)")
    await expect(row.locator("td.member")).to_have_text("Mika")
    await expect(row.locator("td.member span")).to_have_attribute("title", "1300000000000000777")
    ui.assert_clean()
