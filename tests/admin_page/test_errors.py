"""Errors on the page: sentences a person understands, the field's message next to the field,
errors stay until dismissed or the screen changes, successes go by themselves."""

from __future__ import annotations

import json
from typing import Any

from playwright.async_api import Route, expect

from tests.admin_page.conftest import Ui

# Makes the memory API fail inside (a rename: PostgreSQL refuses to DROP a table that other
# tables' foreign keys name).
GONE = "ALTER TABLE memories RENAME TO memories_gone"

SUCCESS_MS = 6000  # status.js SUCCESS_MS

# (HTTP status, code, detail, Retry-After) → the sentence the status line shows.
SENTENCES: list[tuple[int, str, str, str | None, str]] = [
    (0, "network_error", "fetch failed", None, "Cannot reach PlayChat."),
    (401, "unauthorized", "Log in or send the bearer token.", None, "Your session ended"),
    (401, "wrong_password", "Wrong password.", None, "Wrong password."),
    (403, "forbidden_origin", "Cross-origin requests are refused.", None, "refused this page"),
    (404, "not_found", "Note page 3 does not exist.", None, "It was deleted meanwhile"),
    (409, "conflict", "A note page titled 'A' already exists (id 2).", None, "titled 'A' already"),
    (413, "too_large", "The request body is larger than 1048576 bytes.", None, "(the limit is 1.0"),
    (
        422,
        "validation_error",
        "body.idle_minutes: Input should be greater than or equal to 1",
        None,
        "Please check: idle minutes — Input should be greater than or equal to 1.",
    ),
    (422, "validation_error", "The order must list every page.", None, "must list every page"),
    (
        422,
        "validation_error",
        "Invalid value for llm_context_tokens: Input should be a valid integer",
        None,
        "Please check: llm context tokens — Input should be a valid integer.",
    ),
    (429, "too_many_attempts", "Too many failed logins.", "17", "Too many requests; wait 17 s"),
    (500, "internal_error", "Internal server error.", None, "The server hit a problem; the log"),
    (502, "llm_error", "The model is not available.", None, "The model did not answer: The mod"),
    (503, "service_unavailable", "Service Unavailable", None, "The server hit a problem"),
]


async def test_every_kind_of_refusal_reads_as_a_sentence(ui: Ui) -> None:
    await ui.open()
    cases = [list(case[:4]) for case in SENTENCES]
    said: list[str] = await ui.page.evaluate(
        """async (cases) => {
          const {ApiError} = await import('/static/js/api.js');
          const {describe} = await import('/static/js/status.js');
          return cases.map(([status, code, detail, retry]) =>
            describe(new ApiError(status, code, detail, retry)));
        }""",
        cases,
    )
    for case, sentence in zip(SENTENCES, said, strict=True):
        assert case[4] in sentence, (case, sentence)
        assert "HTTP" not in sentence and case[1] not in sentence, sentence
    ui.assert_clean()


async def test_a_server_failure_is_a_sentence_that_stays_until_dismissed(ui: Ui) -> None:
    await ui.page.clock.install()
    await ui.login()
    await ui.admin.services.db.execute(GONE)  # the API now fails inside
    await ui.go("memory")
    status = ui.status
    await expect(status).to_have_attribute("role", "status")
    await expect(status).to_have_attribute("data-kind", "error")
    await expect(status).to_have_attribute("data-http-status", "500")
    await expect(status).to_contain_text("The server hit a problem; the log has details.")
    await ui.page.clock.fast_forward(SUCCESS_MS * 2)
    await expect(status).to_contain_text("The server hit a problem")  # errors do not time out
    await status.get_by_role("button", name="Dismiss message").click()
    await expect(status).to_be_empty()
    ui.assert_clean()


async def test_successes_go_by_themselves(ui: Ui) -> None:
    await ui.page.clock.install()
    await ui.login()
    await ui.go("notes")  # Status is the landing screen
    form = ui.page.get_by_role("form", name="New note page")
    await form.get_by_label("New page title").fill("Groceries")
    await form.get_by_role("button", name="Create page").click()
    await expect(ui.status).to_contain_text('Created page "Groceries".')
    await ui.page.clock.fast_forward(SUCCESS_MS + 500)
    await expect(ui.status).to_be_empty()
    ui.assert_clean()


async def test_a_message_does_not_follow_to_another_screen(ui: Ui) -> None:
    await ui.login()
    await ui.admin.services.db.execute(GONE)
    await ui.go("memory")
    await expect(ui.status).to_have_attribute("data-kind", "error")
    await ui.go("topics")
    await expect(ui.status).to_be_empty()
    await expect(ui.status).not_to_have_attribute("data-kind", "error")
    ui.assert_clean()


async def test_a_refused_field_is_marked_next_to_the_field(ui: Ui) -> None:
    await ui.api("PUT", "/api/topics/1234567890123456789", json_body={"idle_minutes": 45})
    await ui.login()
    await ui.go("topics")
    await ui.page.get_by_role("button", name="Edit channel 1234567890123456789").click()
    editor = ui.page.locator("#topic-editor")
    cron = editor.get_by_label("Cron (periodic posts)")
    await cron.fill("every day")
    await editor.get_by_role("button", name="Save schedule").click()
    await expect(ui.status).to_have_attribute("data-http-status", "422")
    await expect(ui.status).to_contain_text(
        "Please check: Cron (periodic posts) — must be a 5-field crontab expression."
    )
    message = editor.locator(".field-error")
    # Under its field the reason is a sentence of its own.
    await expect(message).to_have_text("Must be a 5-field crontab expression")
    await expect(cron).to_have_attribute("aria-invalid", "true")
    await expect(cron).to_be_focused()
    described_by = await cron.get_attribute("aria-describedby") or ""
    assert await message.get_attribute("id") in described_by.split()
    # Correcting the field takes its message away.
    await cron.fill("0 9 * * *")
    await expect(message).to_have_count(0)
    await expect(cron).not_to_have_attribute("aria-invalid", "true")
    await editor.get_by_role("button", name="Save schedule").click()
    await expect(ui.status).to_contain_text("saved.")
    ui.assert_clean()


async def test_something_deleted_meanwhile(ui: Ui) -> None:
    page = await ui.api("POST", "/api/notes", json_body={"title": "Soon gone"})
    await ui.login()
    await ui.go("notes")  # Status is the landing screen
    await expect(ui.page.locator(".note-tab")).to_have_count(1)
    await ui.api("DELETE", f"/api/notes/{page['id']}")  # another admin, meanwhile
    await ui.page.get_by_role("button", name="Delete page").click()
    await ui.page.get_by_role("button", name="Really delete?").click()
    await expect(ui.status).to_have_attribute("data-http-status", "404")
    await expect(ui.status).to_contain_text("It was deleted meanwhile")
    ui.assert_clean()


async def test_unreachable_and_throttled(ui: Ui) -> None:
    await ui.login()

    async def unreachable(route: Route) -> None:
        await route.abort("connectionrefused")

    await ui.page.route("**/api/topics*", unreachable)
    await ui.go("topics")
    await expect(ui.status).to_contain_text("Cannot reach PlayChat.")
    await ui.page.unroute("**/api/topics*")

    async def throttled(route: Route) -> None:
        body: dict[str, Any] = {"error": "too_many_requests", "detail": "Slow down."}
        await route.fulfill(
            status=429,
            headers={"Retry-After": "30", "Content-Type": "application/json"},
            body=json.dumps(body),
        )

    await ui.page.route("**/api/spaces*", throttled)
    await ui.go("spaces")
    await expect(ui.status).to_contain_text("Too many requests; wait 30 s and try again.")
    # Failed requests are reported on the page, not as script errors.
    assert ui.page_errors == []


async def test_a_long_error_is_cut_short_with_the_rest_under_details(ui: Ui) -> None:
    long_detail = "A model preset for 'x' already exists; " + "more words follow here " * 40

    async def conflict(route: Route) -> None:
        body = {"error": "conflict", "detail": long_detail}
        await route.fulfill(status=409, content_type="application/json", body=json.dumps(body))

    await ui.login()
    await ui.go("connections")
    await ui.page.route("**/api/models/presets", conflict)
    screen = ui.screen("connections")
    await screen.get_by_role("button", name="New connection").click()
    form = screen.get_by_role("form", name="New connection")
    await form.get_by_label("Name").fill("Twice")
    await form.get_by_label("Model").fill("other-model")
    await form.get_by_role("button", name="Create connection").click()
    await expect(ui.status).to_have_attribute("data-kind", "error")
    shown = await ui.status.locator(".status-text").text_content()
    assert shown is not None and len(shown) <= 200 and shown.endswith("…"), shown
    assert shown.startswith("A model preset for 'x' already exists;")
    details = ui.status.locator("details")
    await expect(details.locator("p")).to_be_hidden()
    await details.locator("summary").click()
    await expect(details.locator("p")).to_have_text(long_detail.strip())
    await ui.status.get_by_role("button", name="Dismiss message").click()
    await expect(ui.status).to_be_empty()
    ui.assert_clean()
