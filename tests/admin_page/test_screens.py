"""Every screen (conftest.SCREENS) at 1280×800 and 390×844, empty and with data: screenshots kept,
nothing overflows or is cut off, no serious or critical axe-core violation, no script errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from playwright.async_api import ViewportSize, expect

from tests.admin_page.conftest import DESKTOP, PHONE, SCREENS, Ui
from tests.conftest import LOCAL

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SIZES: tuple[tuple[str, ViewportSize], ...] = (("desktop", DESKTOP), ("phone", PHONE))
# What an empty screen says to do next (screens whose emptiness cannot arise here are left out).
EMPTY_STATES: dict[str, tuple[str, ...]] = {
    "notes": ("No note pages yet.", "press Create page", "/note write"),
    "logs": ("No LLM calls match yet.", "No logs yet. Every call to a model"),
    "memory": ("No sessions yet. One starts when", "No summaries yet.", "No saved knowledge yet."),
    "topics": ("No channel has a topic schedule yet.", "run /topic enable in the channel"),
    "activity": ("No activity in this range yet.", "No model was called in this range."),
    "tools": ("No MCP servers are configured.", "press Reload MCP configuration"),
    "conversations": ("No conversations in this space yet.", "use the Chat screen"),
    "chat": ("No messages yet. Write one below and press Send.",),
    "words": ("No channels known yet.", "then pick one here to see its word pool"),
}


async def seed_everything(ui: Ui) -> None:
    repos = ui.admin.services.repos
    session = await repos.sessions.create(
        LOCAL, title="A rather long session title about Kyoto trips"
    )
    message = await repos.messages.add(LOCAL, session.id, "user", "hello")
    await repos.memories.summarize_messages(LOCAL, session.id, [message.id], "Greeting " * 40)
    for n in range(6):
        call = await repos.api_logs.add(
            session_id=session.id,
            model="ollama/test-model",
            purpose="chat",
            request_json='{"messages": []}',
            response_text="ok",
            error="x" * 300 if n == 5 else None,
            latency_ms=12 + 40 * n,
        )
        created = (START + timedelta(minutes=7 * n)).isoformat(timespec="microseconds")
        await ui.admin.services.db.execute(
            "UPDATE api_logs SET created_at = ? WHERE id = ?", (created, call)
        )
    for title, section in (("Shopping list", "Home"), ("Ideas", "Home"), ("Todo", "Work")):
        await ui.api("POST", "/api/notes", json_body={"title": title, "section": section})
    await ui.api("PUT", "/api/topics/1234567890123456789", json_body={"idle_minutes": 45})


async def no_horizontal_overflow(ui: Ui, where: str) -> None:
    width = await ui.page.evaluate("document.documentElement.scrollWidth")
    viewport = ui.page.viewport_size
    assert viewport is not None
    assert width <= viewport["width"], f"{where}: the page is {width}px wide"


async def check_every_screen(ui: Ui, state: str) -> list[str]:
    """Visit every screen at both sizes; return what is wrong (a photograph of each is kept)."""
    problems: list[str] = []
    for screen in SCREENS:
        await ui.go(screen)
        for label, size in SIZES:
            where = f"{screen} {state} {label}"
            await ui.page.set_viewport_size(size)
            await ui.page.evaluate("window.scrollTo(0, 0)")
            await ui.settle()
            await no_horizontal_overflow(ui, where)
            problems += await ui.cut_controls(screen, where)
            problems += await ui.axe(where)
            await ui.page.screenshot(path=ui.artifact(f"screen-{screen}-{state}-{label}.png"))
        await ui.page.set_viewport_size(DESKTOP)
    return problems


async def test_every_screen_with_data_at_both_sizes(ui: Ui) -> None:
    await ui.enable_axe()
    await seed_everything(ui)
    await ui.login()
    problems = await check_every_screen(ui, "data")
    assert problems == [], "\n".join(problems)

    await ui.page.locator("#nav").get_by_role("button", name="Log out").click()
    await expect(ui.page.locator("#screen-login")).to_be_visible()
    for label, size in SIZES:
        await ui.page.set_viewport_size(size)
        await no_horizontal_overflow(ui, f"login {label}")
        assert await ui.axe(f"login {label}") == []
        await ui.page.screenshot(path=ui.artifact(f"screen-login-{label}.png"))
    ui.assert_clean()


async def test_every_screen_when_empty_says_what_to_do_next(ui: Ui) -> None:
    await ui.enable_axe()
    await ui.login()
    for screen, sentences in EMPTY_STATES.items():
        await ui.go(screen)
        for sentence in sentences:
            await expect(ui.screen(screen)).to_contain_text(sentence)
    # A search that finds nothing says what to try instead.
    await ui.go("conversations")
    screen = ui.screen("conversations")
    await screen.get_by_label("Search messages, notes and knowledge").fill("nowhere-to-be-found")
    await screen.get_by_role("button", name="Search", exact=True).click()
    await expect(screen.locator("#search-results")).to_contain_text(
        "Nothing found. Try another word"
    )
    problems = await check_every_screen(ui, "empty")
    assert problems == [], "\n".join(problems)
    ui.assert_clean()


async def test_every_screen_in_dark_mode(ui: Ui) -> None:
    """The dark palette passes axe too (contrast), and charts take its colours."""
    await ui.enable_axe()
    await seed_everything(ui)
    await ui.login()
    await ui.go("logs")
    swatch = ui.page.locator("#log-chart .chart-legend .swatch").first
    await expect(swatch).to_have_css("background-color", "rgb(47, 95, 208)")  # --accent, light
    await ui.page.emulate_media(color_scheme="dark")
    await expect(swatch).to_have_css("background-color", "rgb(109, 149, 255)")  # --accent, dark
    problems: list[str] = []
    for screen in SCREENS:
        await ui.go(screen)
        await ui.settle()
        problems += await ui.axe(f"{screen} dark")
        await ui.page.screenshot(path=ui.artifact(f"screen-{screen}-dark-desktop.png"))
    assert problems == [], "\n".join(problems)
    ui.assert_clean()


async def test_the_phone_navigation_fits(ui: Ui) -> None:
    await ui.login()
    await ui.page.set_viewport_size(PHONE)
    await ui.page.locator("#menu-toggle").click()
    links = ui.page.locator("#nav a, #tabs a")
    assert await links.count() == 7 + 4, "the seven sections and the Status tabs"
    for index in range(await links.count()):
        box = await links.nth(index).bounding_box()
        assert box is not None and box["x"] + box["width"] <= PHONE["width"]
    ui.assert_clean()
