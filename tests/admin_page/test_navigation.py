"""The cockpit's navigation: seven sections in the bar, every former screen a tab inside one (its
old #hash still opens it), the bar folded behind a Menu button on a phone, and rough edges gone
(no box around the heading that takes the focus, the chat following its newest answer)."""

from __future__ import annotations

from playwright.async_api import expect

from tests.admin_page.conftest import DESKTOP, PHONE, SCREENS, SECTION_OF, SECTIONS, Ui
from tests.fakes.llm_server import Text


async def test_seven_sections_with_every_screen_a_tab(ui: Ui) -> None:
    await ui.login()
    sections = ui.page.locator("#nav a[data-section]")
    assert await sections.count() == len(SECTIONS) <= 7
    assert set(SECTION_OF) == set(SCREENS), "every screen sits in a section"
    for section, screens in SECTIONS.items():
        await ui.page.locator(f'#nav a[data-section="{section}"]').click()
        await expect(ui.screen(screens[0])).to_be_visible()
        tabs = ui.page.locator("#tabs a")
        if len(screens) == 1:
            await expect(ui.page.locator("#tabs")).to_be_hidden()
            continue
        shown = await tabs.evaluate_all("links => links.map((a) => a.dataset.screen)")
        assert shown == list(screens), section
        await expect(tabs.first).to_have_attribute("aria-current", "page")
    for screen in SCREENS:
        await ui.go(screen)
        current = ui.page.locator("#nav a[aria-current=page]")
        await expect(current).to_have_attribute("data-section", SECTION_OF[screen])
    # An old address (a bookmark of a screen) opens that screen inside its section.
    await ui.page.goto(ui.admin.url + "/#words")
    await expect(ui.screen("words")).to_be_visible()
    await expect(ui.page.locator('#nav a[data-section="memory"]')).to_have_attribute(
        "aria-current", "page"
    )
    await expect(ui.page.locator('#tabs a[data-screen="words"]')).to_have_attribute(
        "aria-current", "page"
    )
    assert await ui.page.title() == "Word pool & tags · Memory · PlayChat admin"
    ui.assert_clean()


async def test_the_phone_menu_is_collapsed_opens_navigates_and_closes(ui: Ui) -> None:
    await ui.login()
    toggle = ui.page.locator("#menu-toggle")
    await expect(toggle).to_be_hidden()  # a desktop shows the bar itself
    await ui.page.set_viewport_size(PHONE)
    nav = ui.page.locator("#nav")
    await expect(toggle).to_be_visible()
    await expect(toggle).to_have_attribute("aria-expanded", "false")
    await expect(nav).to_be_hidden()
    bar = await ui.page.locator("header.top").bounding_box()
    assert bar is not None and bar["height"] <= 64, f"the folded bar takes {bar}"

    await toggle.click()
    await expect(toggle).to_have_attribute("aria-expanded", "true")
    await expect(nav).to_be_visible()
    await nav.get_by_role("link", name="Topics").click()
    await expect(ui.screen("topics")).to_be_visible()
    await expect(nav).to_be_hidden()
    await expect(toggle).to_have_attribute("aria-expanded", "false")

    # By keyboard: Enter opens it, Escape closes it and gives the focus back to the button.
    await toggle.focus()
    await ui.page.keyboard.press("Enter")
    await expect(nav).to_be_visible()
    await ui.page.keyboard.press("Tab")
    await expect(nav.locator("a").first).to_be_focused()
    await ui.page.keyboard.press("Escape")
    await expect(nav).to_be_hidden()
    await expect(toggle).to_be_focused()
    # A tab inside a section stays in view on the phone, below the folded bar.
    await ui.go("live-log")
    await expect(ui.page.locator('#tabs a[data-screen="live-log"]')).to_be_in_viewport()
    await ui.page.set_viewport_size(DESKTOP)
    await expect(nav).to_be_visible()
    ui.assert_clean()


async def test_the_heading_takes_the_focus_without_a_box(ui: Ui) -> None:
    await ui.login()
    await ui.page.locator('#nav a[data-section="topics"]').focus()
    await ui.page.keyboard.press("Enter")
    title = ui.page.locator("#topics-title")
    await expect(title).to_be_focused()
    style = await title.evaluate(
        "el => { const s = getComputedStyle(el); return [s.outlineStyle, s.textDecorationLine]; }"
    )
    assert style == ["none", "underline"], "a thin underline, not the large focus box"
    ui.assert_clean()


async def test_the_chat_follows_the_newest_answer(ui: Ui) -> None:
    await ui.login()
    await ui.go("chat")
    screen = ui.screen("chat")
    log = ui.page.locator("#chat-log")
    for n in range(4):
        ui.admin.llm.script(Text(f"Answer {n}. " + "A long line of text. " * 60))
        await screen.get_by_label("Message", exact=True).fill(f"Question {n}")
        await screen.get_by_role("button", name="Send").click()
        await expect(log.locator(".msg-assistant").last.locator(".text")).to_contain_text(
            f"Answer {n}."
        )
    gap = await log.evaluate("el => el.scrollHeight - el.scrollTop - el.clientHeight")
    assert await log.evaluate("el => el.scrollHeight > el.clientHeight"), "the log scrolls"
    assert gap < 2, f"the newest answer is {gap}px below the end of the view"
    await expect(log.locator(".msg-assistant").last).to_be_in_viewport()
    ui.assert_clean()
