"""Every table with buttons, filled with long names, at 1280×800 and 390×844: each button is
whole on screen — inside the window and every box that clips or scrolls it, its label not cut
(the sessions table once cut "Delete" to "Dele")."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from tests.admin_page.conftest import DESKTOP, PHONE, OpenUi, Ui
from tests.admin_page.test_screens import seed_everything
from tests.conftest import LOCAL
from tests.mcp.conftest import ConfigWriter, stdio_entry, write_config

__all__ = ["write_config"]  # the MCP config fixture, used here by name

LONG = "An-unusually-long-name-without-spaces-for-wrapping-" * 2
GUILD = "guild:1234567890123456789"
# (screen, table): each table listed here must show at least one button.
TABLES = (
    ("memory", "#session-table"),
    ("logs", "#log-table"),
    ("connections", "#connection-table"),
    ("topics", "#topic-table"),
    ("spaces", "#space-table"),
    ("tools", "#mcp-servers"),
)
WHOLE_JS = """(table) => {
  const problems = [];
  const buttons = [...table.querySelectorAll('button')].filter((b) => b.getClientRects().length);
  const width = document.documentElement.clientWidth;
  for (const button of buttons) {
    const box = button.getBoundingClientRect();
    const name = (button.getAttribute('aria-label') || button.textContent).trim().slice(0, 50);
    if (box.left < -0.5 || box.right > width + 0.5) problems.push(`${name}: outside the window`);
    if (button.scrollWidth > button.clientWidth + 1) problems.push(`${name}: label cut`);
    for (let up = button.parentElement; up; up = up.parentElement) {
      const style = getComputedStyle(up);
      if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
      const clip = up.getBoundingClientRect();
      if (box.left < clip.left - 0.5 || box.right > clip.right + 0.5) {
        problems.push(`${name}: cut by ${up.tagName.toLowerCase()}.${up.className}`);
        break;
      }
    }
  }
  return {count: buttons.length, problems};
}"""


async def seed_long_rows(ui: Ui) -> None:
    services = ui.admin.services
    await seed_everything(ui)
    await services.spaces.ensure(GUILD, LONG)
    for n in range(3):
        await services.repos.sessions.create(LOCAL, title=f"{LONG} {n}")
    await ui.api(
        "POST",
        "/api/models/presets",
        json_body={
            "label": LONG,
            "value": "openai/" + "a-long-model-name-" * 4,
            "api_base": "https://" + "very-long-host-name." * 5 + "example/v1",
        },
    )


async def check_tables(ui: Ui) -> list[str]:
    problems: list[str] = []
    for screen, selector in TABLES:
        await ui.go(screen)
        table = ui.screen(screen).locator(selector)
        await expect(table.locator("button").first).to_be_attached()
        for label, size in (("1280x800", DESKTOP), ("390x844", PHONE)):
            await ui.page.set_viewport_size(size)
            await ui.settle()
            found: dict[str, Any] = await table.evaluate(WHOLE_JS)
            where = f"{screen} {selector} at {label}"
            if not found["count"]:
                problems.append(f"{where}: no button visible")
            problems += [f"{where}: {problem}" for problem in found["problems"]]
        await ui.page.set_viewport_size(DESKTOP)
    return problems


async def test_every_tables_buttons_are_whole_at_desktop_and_phone_size(
    open_ui: OpenUi, write_config: ConfigWriter
) -> None:
    config = write_config({"a-rather-long-mcp-server-name": stdio_entry()})
    ui = await open_ui(mcp_config=config)
    await seed_long_rows(ui)
    await ui.login()
    problems = await check_tables(ui)
    assert problems == [], "\n".join(problems)
    ui.assert_clean()


async def test_the_check_finds_a_cut_button(ui: Ui) -> None:
    """The check itself: a table squeezed into a narrow clipping box is reported."""
    await seed_long_rows(ui)
    await ui.login()
    await ui.go("connections")
    table = ui.screen("connections").locator("#connection-table")
    await table.evaluate(
        "(t) => { t.parentElement.style.overflow = 'hidden'; t.style.marginLeft = '-2000px'; }"
    )
    found = await table.evaluate(WHOLE_JS)
    assert found["count"] > 0 and any("cut by" in p for p in found["problems"]), found
    ui.page_errors.clear()
