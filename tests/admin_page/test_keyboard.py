"""Keyboard only: from the login form, every screen is reached from the navigation with Tab and
Enter, and its main action is done with the keyboard alone (Tab, typing, Enter, Space, arrows),
each checked by what it did."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from playwright.async_api import Locator, expect

from bot.store.repos.directory import ChannelSeen
from tests.admin_api.conftest import PASSWORD
from tests.admin_page.conftest import SCREENS, SECTION_OF, Ui
from tests.admin_page.test_screens import seed_everything
from tests.fakes.llm_server import Text

GUILD = "guild:1234567890123456789"
RAMEN = 1200000000000000001
# Enough for the longest screen; a control further away than this is not reachable in practice.
MAX_TABS = 120


async def tab_to(ui: Ui, target: Locator, *, back: bool = False) -> None:
    """Press Tab (Shift+Tab with `back`) until `target` has the focus."""
    key = "Shift+Tab" if back else "Tab"
    for _ in range(MAX_TABS):
        if await target.evaluate("(el) => el === document.activeElement"):
            return
        await ui.page.keyboard.press(key)
    raise AssertionError(f"{target} is not reachable with {key}")


async def open_screen(ui: Ui, name: str) -> None:
    """Reach the screen's section in the bar from the content (backwards), press Enter, then
    Shift+Tab from its heading to the screen's tab and press Enter."""
    link = ui.page.locator(f'#nav a[data-section="{SECTION_OF[name]}"]')
    await tab_to(ui, link, back=True)
    await ui.page.keyboard.press("Enter")
    await expect(link).to_have_attribute("aria-current", "page")
    tab = ui.page.locator(f'#tabs a[data-screen="{name}"]')
    if await tab.count():
        await tab_to(ui, tab, back=True)  # the tabs sit just before the screen's heading
        await ui.page.keyboard.press("Enter")
        await expect(tab).to_have_attribute("aria-current", "page")
    root = ui.screen(name)
    await expect(root).to_be_visible()
    await expect(root).not_to_have_attribute("data-loading", "true")
    await expect(root.locator("h2")).to_be_focused()


Step = Callable[[Ui], Awaitable[None]]


async def status(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_role("button", name="Check now"))
    await ui.page.keyboard.press("Enter")
    await expect(ui.status).to_contain_text("Every part was checked just now.")


async def activity(ui: Ui) -> None:
    pick = ui.page.get_by_label("Range")
    before = await pick.input_value()
    await tab_to(ui, pick)
    async with ui.page.expect_request(lambda r: "/api/activity" in r.url):
        await ui.page.keyboard.press("ArrowDown")
    assert await pick.input_value() != before


async def notes(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_label("New page title"))
    await ui.page.keyboard.type("Typed page")
    await ui.page.keyboard.press("Enter")
    await expect(ui.status).to_contain_text('Created page "Typed page".')


async def logs(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_label("Errors only"))
    await ui.page.keyboard.press("Space")
    await tab_to(ui, ui.page.get_by_role("button", name="Apply filter"))
    await ui.page.keyboard.press("Enter")
    rows = ui.page.locator("#log-table tbody tr")
    await expect(rows).to_have_count(1)  # seed_everything: one failed call of six


async def settings(ui: Ui) -> None:
    field = ui.screen("settings").get_by_label("Context window (tokens)", exact=False).first
    wanted = int(await field.input_value()) + 1024
    await tab_to(ui, field)
    await ui.page.keyboard.press("Control+A")
    await ui.page.keyboard.type(str(wanted))
    await ui.page.keyboard.press("Enter")
    await expect(ui.status).to_contain_text("saved", ignore_case=True)
    assert ui.admin.services.settings().llm_context_tokens == wanted


async def memory(ui: Ui) -> None:
    # The seeded terminal session holds the summary; the Discord one ("Broth") may sort first.
    row = ui.screen("memory").get_by_role("row").filter(has_text="terminal")
    button = row.get_by_role("button", name="Memory")
    await tab_to(ui, button)
    await ui.page.keyboard.press("Enter")
    await expect(ui.screen("memory")).to_contain_text("Greeting")


async def topics(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_label("Discord channel id"))
    await ui.page.keyboard.type("1300000000000000009")
    await ui.page.keyboard.press("Enter")
    editor = ui.page.locator("#topic-editor form")
    await expect(editor).to_be_visible()
    await tab_to(ui, editor.locator("button[type=submit]"))
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.locator('#topic-table tr[data-id="1300000000000000009"]')).to_be_visible()


async def spaces(ui: Ui) -> None:
    pick = ui.page.get_by_label("Default model of Ramen Club (guild:1234567890123456789)")
    await tab_to(ui, pick)
    await ui.page.keyboard.press("ArrowDown")
    await expect(ui.status).to_contain_text("Ramen Club (guild:1234567890123456789) now uses")
    record = await ui.admin.services.spaces.get(GUILD)
    assert record is not None and record.default_model


async def tools(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_role("button", name="Reload MCP configuration"))
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.locator("#mcp-reload-result")).not_to_be_empty()


async def live_log(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_role("button", name="Pause"))
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.get_by_role("button", name="Resume")).to_be_visible()
    await expect(ui.page.locator("#live-state")).to_contain_text("Paused")


async def conversations(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_label("Search messages, notes and knowledge"))
    await ui.page.keyboard.type("豚骨")
    await ui.page.keyboard.press("Enter")
    hit = ui.page.locator('#search-results .search-hit[data-kind="messages"]')
    await expect(hit).to_have_count(1)
    await tab_to(ui, hit.get_by_role("link", name="Open in transcript"))
    await ui.page.keyboard.press("Enter")
    await expect(ui.page.locator("#conv-transcript .msg.found")).to_be_focused()


async def chat(ui: Ui) -> None:
    ui.admin.llm.script(Text("Answered by keyboard."))
    await tab_to(ui, ui.screen("chat").get_by_label("Message", exact=True))
    await ui.page.keyboard.type("Hello from the keyboard")
    await ui.page.keyboard.press("Control+Enter")
    answer = ui.page.locator("#chat-log .msg-assistant").last
    await expect(answer.locator(".text")).to_have_text("Answered by keyboard.")


async def words(ui: Ui) -> None:
    pick = ui.screen("words").get_by_label("Channel", exact=True)
    await tab_to(ui, pick)
    for _ in range(5):
        if await ui.page.locator("#word-pool li").count():
            break
        await ui.page.keyboard.press("ArrowDown")
    await expect(ui.page.locator("#word-pool li", has_text="豚骨")).to_be_visible()


async def members(ui: Ui) -> None:
    pick = ui.screen("members").get_by_label("Space to show", exact=True)
    await tab_to(ui, pick)
    for _ in range(5):
        if await ui.page.locator("#members-list li[data-fact]").count():
            break
        await ui.page.keyboard.press("ArrowDown")
    delete = ui.page.get_by_role("button", name="Forget all facts of Aiko")
    await tab_to(ui, delete)
    await ui.page.keyboard.press("Enter")
    await ui.page.keyboard.press("Enter")
    await expect(ui.status).to_contain_text("Forgot Aiko's facts.")


async def connections(ui: Ui) -> None:
    await tab_to(ui, ui.page.get_by_role("button", name="New connection"))
    await ui.page.keyboard.press("Enter")
    form = ui.page.get_by_role("form", name="New connection")
    await expect(form.get_by_label("Name")).to_be_focused()
    await ui.page.keyboard.type("Typed box")
    await tab_to(ui, form.get_by_label("Model"))
    await ui.page.keyboard.type("other-model")
    await ui.page.keyboard.press("Enter")
    await expect(ui.status).to_contain_text("Connection Typed box saved.")


STEPS: dict[str, Step] = {
    "status": status,
    "activity": activity,
    "notes": notes,
    "logs": logs,
    "settings": settings,
    "memory": memory,
    "topics": topics,
    "spaces": spaces,
    "tools": tools,
    "live-log": live_log,
    "conversations": conversations,
    "chat": chat,
    "words": words,
    "members": members,
    "connections": connections,
}


async def test_every_screen_and_its_main_action_by_keyboard_alone(ui: Ui) -> None:
    assert set(STEPS) == set(SCREENS), "a new screen needs its keyboard step here"
    services = ui.admin.services
    await seed_everything(ui)
    await services.spaces.ensure(GUILD, "Ramen Club")
    await services.repos.directory.replace_server(GUILD, [ChannelSeen(RAMEN, "ramen", "text")])
    await services.repos.word_pool.add(GUILD, RAMEN, ["豚骨", "醤油"], keep=50)
    session = await services.repos.sessions.create(
        GUILD, title="Broth", source="discord", discord_channel_id=RAMEN
    )
    await services.repos.messages.add(GUILD, session.id, "user", "豚骨が好き")
    await services.members.remember(
        GUILD, "1300000000000000848", "Likes 豚骨", "request", member_name="Aiko"
    )

    await ui.open()
    await expect(ui.page.get_by_label("Admin password")).to_be_focused()
    await ui.page.keyboard.type(PASSWORD)
    await ui.page.keyboard.press("Enter")
    await expect(ui.screen("status")).to_be_visible()
    await ui.page.wait_for_load_state("networkidle")
    done = []
    for name in SCREENS:
        await open_screen(ui, name)
        await STEPS[name](ui)
        done.append(name)
    assert done == list(SCREENS)
    ui.assert_clean()
