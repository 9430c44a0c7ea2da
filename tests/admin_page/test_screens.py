"""Every screen at desktop and phone width: screenshots kept, nothing overflows, no errors."""

from __future__ import annotations

from playwright.async_api import expect

from tests.admin_page.conftest import DESKTOP, PHONE, SCREENS, Ui
from tests.conftest import LOCAL


async def seed_everything(ui: Ui) -> None:
    repos = ui.admin.services.repos
    session = await repos.sessions.create(
        LOCAL, title="A rather long session title about Kyoto trips"
    )
    message = await repos.messages.add(LOCAL, session.id, "user", "hello")
    await repos.memories.summarize_messages(LOCAL, session.id, [message.id], "Greeting " * 40)
    await repos.api_logs.add(
        session_id=session.id,
        model="ollama/test-model",
        purpose="chat",
        request_json='{"messages": []}',
        response_text="ok",
        error="x" * 300,
        latency_ms=12,
    )
    for title, section in (("Shopping list", "Home"), ("Ideas", "Home"), ("Todo", "Work")):
        await ui.api("POST", "/api/notes", json_body={"title": title, "section": section})
    await ui.api("PUT", "/api/topics/1234567890123456789", json_body={"idle_minutes": 45})


async def no_horizontal_overflow(ui: Ui) -> None:
    width = await ui.page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width}px wide at phone width"


async def test_every_screen_fits_a_phone_and_is_photographed(ui: Ui) -> None:
    await seed_everything(ui)
    await ui.login()
    for screen in SCREENS:
        await ui.go(screen)
        await ui.page.set_viewport_size(PHONE)
        await no_horizontal_overflow(ui)
        links = ui.page.locator("#nav a")
        for index in range(await links.count()):
            box = await links.nth(index).bounding_box()
            assert box is not None and box["x"] + box["width"] <= PHONE["width"], screen
        await ui.page.set_viewport_size(DESKTOP)
        await ui.shoot(f"screen-{screen}")
    await ui.page.locator("#nav").get_by_role("button", name="Log out").click()
    await expect(ui.page.locator("#screen-login")).to_be_visible()
    await ui.page.set_viewport_size(PHONE)
    await no_horizontal_overflow(ui)
    ui.assert_clean()


async def test_errors_are_announced_in_the_live_region(ui: Ui) -> None:
    await ui.login()
    await ui.admin.services.db.execute("DROP TABLE memories")  # the API now fails inside
    await ui.go("memory")
    status = ui.status
    await expect(status).to_have_attribute("role", "status")
    await expect(status).to_have_attribute("data-kind", "error")
    await expect(status).to_contain_text("Internal server error. (HTTP 500, internal_error)")
    await status.get_by_role("button", name="Dismiss message").click()
    await expect(status).to_be_empty()
    ui.assert_clean()
