"""Logging in and out of the admin page, by mouse and by keyboard."""

from __future__ import annotations

from playwright.async_api import expect

from admin_api.security import COOKIE_NAME
from tests.admin_api.conftest import PASSWORD
from tests.admin_page.conftest import Ui


async def test_wrong_password_is_refused_visibly_then_login_and_logout(ui: Ui) -> None:
    await ui.open()
    login = ui.page.locator("#screen-login")
    await expect(login).to_be_visible()
    await expect(ui.page.locator("#nav")).to_be_hidden()
    await expect(ui.page.get_by_label("Admin password")).to_be_focused()
    await ui.shoot("login")

    await ui.page.get_by_label("Admin password").fill("not the password")
    await ui.page.get_by_role("button", name="Log in").click()
    await expect(ui.status).to_contain_text("Wrong password.")
    await expect(ui.status).to_have_attribute("data-http-status", "401")
    await expect(ui.status).to_have_attribute("aria-live", "polite")
    assert await login.is_visible()

    await ui.page.get_by_label("Admin password").fill(PASSWORD)
    await ui.page.get_by_role("button", name="Log in").click()
    await expect(ui.page.locator("#screen-status")).to_be_visible()
    await expect(login).to_be_hidden()
    cookies = {c["name"]: c for c in await ui.context.cookies()}
    assert cookies[COOKIE_NAME]["httpOnly"] is True
    assert cookies[COOKIE_NAME]["sameSite"] == "Strict"
    assert await ui.page.evaluate("document.cookie") == "", "the login cookie is HttpOnly"

    await ui.page.get_by_role("button", name="Log out").click()
    await expect(login).to_be_visible()
    await expect(ui.status).to_contain_text("Logged out.")
    rows = await ui.admin.services.db.fetchall("SELECT token_hash FROM admin_sessions")
    assert rows == [], "logging out ends the server-side session"
    ui.assert_clean()


async def test_keyboard_only_login_and_navigation(ui: Ui) -> None:
    await ui.open()
    await expect(ui.page.get_by_label("Admin password")).to_be_focused()
    await ui.page.keyboard.type(PASSWORD)
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.locator("#screen-status")).to_be_visible()

    models_link = ui.page.locator('#nav a[data-section="models"]')
    for _ in range(20):
        await ui.page.keyboard.press("Tab")
        if await models_link.evaluate("link => link === document.activeElement"):
            break
    await expect(models_link).to_be_focused()
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.locator("#screen-connections")).to_be_visible()
    await expect(models_link).to_have_attribute("aria-current", "page")
    await expect(ui.page.locator("#connections-title")).to_be_focused()
    logs_link = ui.page.locator('#tabs a[data-screen="logs"]')
    await ui.page.locator('#nav a[data-section="status"]').focus()
    await ui.page.keyboard.press("Enter")
    for _ in range(20):
        await ui.page.keyboard.press("Shift+Tab")  # the tabs sit just before the heading
        if await logs_link.evaluate("link => link === document.activeElement"):
            break
    await expect(logs_link).to_be_focused()
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.locator("#screen-logs")).to_be_visible()
    await expect(logs_link).to_have_attribute("aria-current", "page")
    await expect(ui.page.locator('#nav a[data-section="status"]')).to_have_attribute(
        "aria-current", "page"
    )
    await expect(ui.page.locator("#logs-title")).to_be_focused()
    # The focus is on the heading for screen readers, without a box around it.
    outline = await ui.page.locator("#logs-title").evaluate(
        "el => getComputedStyle(el).outlineStyle"
    )
    assert outline == "none"

    # The skip link jumps into the content without leaving the screen.
    await ui.page.locator("a.skip").focus()
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.locator("#main")).to_be_focused()
    await expect(ui.page.locator("#screen-logs")).to_be_visible()
    ui.assert_clean()


async def test_an_expired_login_returns_to_the_login_form(ui: Ui) -> None:
    await ui.login()
    # Logs is a tab of Status: open a sibling tab without a live stream first (the Overview's
    # stream would notice the expiry by itself and race the click).
    await ui.go("activity")
    await ui.page.wait_for_load_state("networkidle")
    ui.admin.clock.advance(ui.admin.config.session_max_age + 60)
    await ui.page.locator('#tabs a[data-screen="logs"]').click()
    await expect(ui.page.locator("#screen-login")).to_be_visible()
    await expect(ui.status).to_contain_text("Your session ended; log in again.")
    await ui.page.get_by_label("Admin password").fill(PASSWORD)
    await ui.page.get_by_role("button", name="Log in").click()
    await expect(ui.page.locator("#screen-logs")).to_be_visible()  # back where the user was
    ui.assert_clean()
