"""The live log screen: lines arrive as the server logs them (secrets masked by the API), the
level filter, pause and resume, and a bounded list."""

from __future__ import annotations

import logging

import pytest
from playwright.async_api import expect

from tests.admin_api.conftest import API_KEY
from tests.admin_page.conftest import OpenUi

LOGGER = "bot.page_live_log_test"


async def test_a_logged_line_appears_live_and_pause_holds_lines_back(
    open_ui: OpenUi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    logger = logging.getLogger(LOGGER)
    ui = await open_ui(llm_api_key=API_KEY)
    await ui.login()
    await ui.go("live-log")
    lines = ui.page.locator("#live-lines")
    await expect(ui.page.locator("#live-state")).to_have_text("Live.")

    logger.warning("the cache is cold; key %s", API_KEY)
    line = lines.locator("li", has_text="the cache is cold")
    await expect(line).to_be_visible()
    await expect(line).to_contain_text("WARNING")
    await expect(line).to_contain_text(LOGGER)
    await expect(line).to_contain_text("[REDACTED]")
    await expect(lines).not_to_contain_text(API_KEY)

    await ui.page.get_by_role("button", name="Pause").click()
    logger.warning("written while paused")
    await expect(ui.page.locator("#live-state")).to_have_text("Paused; 1 new line waiting.")
    await expect(lines).not_to_contain_text("written while paused")
    await ui.page.get_by_role("button", name="Resume").click()
    await expect(lines).to_contain_text("written while paused")

    await ui.page.get_by_label("Level and above").select_option("ERROR")
    await expect(ui.page.locator("#live-state")).to_have_text("Live.")
    logger.warning("a warning below the filter")
    logger.error("an error above it")
    await expect(lines).to_contain_text("an error above it")
    await expect(lines).not_to_contain_text("a warning below the filter")
    await expect(lines).not_to_contain_text("the cache is cold")  # the list began again
    await ui.shoot("live-log")
    ui.assert_clean()


async def test_the_page_keeps_only_the_newest_lines(
    open_ui: OpenUi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    logger = logging.getLogger(LOGGER)
    ui = await open_ui()
    await ui.login()
    await ui.go("live-log")
    await expect(ui.page.locator("#live-state")).to_have_text("Live.")
    lines = ui.page.locator("#live-lines")
    # In batches the stream's queue holds (a faster writer would make it skip lines).
    for start in range(0, 520, 130):
        for n in range(start, start + 130):
            logger.info("burst line %d.", n)
        await expect(lines).to_contain_text(f"burst line {start + 129}.")
    await expect(lines).to_have_attribute("data-lines", "500")
    await expect(lines.locator("li")).to_have_count(500)
    await expect(lines.locator("li").first).to_contain_text("burst line 20.")
    ui.assert_clean()


async def test_the_text_and_logger_filters_narrow_the_lines(
    open_ui: OpenUi, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    ui = await open_ui()
    await ui.login()
    await ui.go("live-log")
    state = ui.page.locator("#live-state")
    await expect(state).to_have_text("Live.")
    await ui.page.get_by_label("Text contains").fill("kyoto")
    await ui.page.get_by_label("Text contains").press("Enter")
    await ui.page.get_by_label("Loggers").fill(f"{LOGGER},-{LOGGER}.noisy")
    await ui.page.get_by_label("Loggers").press("Enter")
    await expect(state).to_have_text("Live.")
    lines = ui.page.locator("#live-lines")
    logging.getLogger(LOGGER + ".noisy").warning("kyoto from the noisy child")
    logging.getLogger(LOGGER).warning("osaka weather")
    logging.getLogger("bot.elsewhere").warning("kyoto elsewhere")
    logging.getLogger(LOGGER).warning("Kyoto weather")
    await expect(lines).to_contain_text("Kyoto weather")
    await expect(lines.locator("li")).to_have_count(1)
    ui.assert_clean()
