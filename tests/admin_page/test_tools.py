"""The tools and MCP screen: every tool with its source and state, the MCP servers, and
reloading MCP_CONFIG from the page picks up a new server (real demo servers over stdio)."""

from __future__ import annotations

from playwright.async_api import expect

from tests.admin_page.conftest import OpenUi
from tests.mcp.conftest import ConfigWriter, stdio_entry, write_config

__all__ = ["write_config"]  # the MCP config fixture, used here by name


async def test_reloading_mcp_from_the_page_picks_up_a_new_server(
    open_ui: OpenUi, write_config: ConfigWriter
) -> None:
    config = write_config({"one": stdio_entry()})
    ui = await open_ui(mcp_config=config)
    await ui.login()
    await ui.go("tools")
    one = ui.page.locator('#mcp-servers tr[data-server="one"]')
    await expect(one).to_have_attribute("data-state", "connected")
    one_echo = ui.page.locator('#tool-list tr[data-tool="one__echo"]')
    await expect(one_echo).to_contain_text("Offered to the model")
    await expect(one_echo).to_contain_text("MCP: one")
    await expect(ui.page.locator('#mcp-servers tr[data-server="two"]')).to_have_count(0)

    write_config({"one": stdio_entry(), "two": stdio_entry()})
    await ui.page.get_by_role("button", name="Reload MCP configuration").click()
    result = ui.page.locator("#mcp-reload-result")
    await expect(result).to_contain_text("Added: two; removed: none; restarted: none")
    await expect(result).to_have_attribute("data-ok", "true")
    two = ui.page.locator('#mcp-servers tr[data-server="two"]')
    await expect(two).to_be_visible()
    await ui.page.get_by_role("button", name="Reconnect two").click()
    # Starting the second MCP server takes a while on a loaded machine.
    await expect(ui.status).to_contain_text("two: ", timeout=20_000)
    await expect(two).to_have_attribute("data-state", "connected")
    await expect(ui.page.locator('#tool-list tr[data-tool="two__echo"]')).to_be_visible()
    await ui.shoot("tools-after-reload")
    ui.assert_clean()


async def test_a_broken_mcp_file_is_reported_and_nothing_changes(
    open_ui: OpenUi, write_config: ConfigWriter
) -> None:
    config = write_config({"one": stdio_entry()})
    ui = await open_ui(mcp_config=config)
    await ui.login()
    await ui.go("tools")
    await expect(ui.page.locator('#mcp-servers tr[data-server="one"]')).to_be_visible()
    config.write_text("{not json", encoding="utf-8")
    await ui.page.get_by_role("button", name="Reload MCP configuration").click()
    result = ui.page.locator("#mcp-reload-result")
    await expect(result).to_contain_text("Nothing changed:")
    await expect(result).to_have_attribute("data-ok", "false")
    await expect(ui.page.locator('#mcp-servers tr[data-server="one"]')).to_be_visible()
    ui.assert_clean()
