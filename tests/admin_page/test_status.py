"""The status screen (the landing screen): a model that cannot be reached shows as down with its
reason, and the screen follows readiness live over server-sent events, without a reload."""

from __future__ import annotations

import pytest
from playwright.async_api import expect

from bot.ops.probes import ShardLink, discord_check
from tests.admin_page.conftest import OpenUi
from tests.ops.conftest import closed_port


async def test_status_shows_a_down_model_and_follows_changes_live(open_ui: OpenUi) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    ui = await open_ui(llm_api_base=base)
    await ui.login()
    await expect(ui.screen("status")).to_be_visible()  # the landing screen
    model = ui.page.locator('#status-components [data-component="model"]')
    await expect(model).to_have_attribute("data-state", "unknown")
    await expect(ui.page.locator("#status-live")).to_contain_text("Live")
    await ui.page.evaluate("window.stillTheSamePage = true")

    # A check made elsewhere (here: straight through the API) reaches the open page.
    await ui.api("POST", "/api/readiness/check")
    await expect(model).to_have_attribute("data-state", "down")
    await expect(model.locator(".state")).to_have_text("Down")
    await expect(model).to_contain_text(f"The model server at {base} is not reachable")
    await expect(model).to_contain_text("Last error: connection refused")
    await expect(ui.page.locator("#status-overall")).to_contain_text("cannot answer")
    await expect(ui.screen("status")).to_have_attribute("data-overall", "down")
    await expect(ui.page.locator("#status-about")).to_contain_text("0.1.0")
    await ui.shoot("status-model-down")

    # The owner fixes the address: the model is checked again and the page follows by itself.
    fixed = {"values": {"llm_api_base": ui.admin.llm.url}}
    await ui.api("PUT", "/api/settings", json_body=fixed)
    await expect(model).to_have_attribute("data-state", "ok")
    await expect(model.locator(".state")).to_have_text("Working")
    assert await ui.page.evaluate("window.stillTheSamePage") is True

    await ui.page.get_by_role("button", name="Check now").click()
    await expect(ui.status).to_contain_text("Every part was checked just now.")
    await expect(ui.page.locator('[data-component="database"]')).to_have_attribute(
        "data-state", "ok"
    )
    ui.assert_clean()


@pytest.mark.sqlite_only(reason="downloads SQLite's online backup; PostgreSQL is pg_dump's")
async def test_status_shows_the_last_backup_after_a_download(open_ui: OpenUi) -> None:
    ui = await open_ui()
    await ui.login()
    backup = ui.page.locator("#status-backup")
    await expect(backup).to_contain_text("None recorded yet")
    async with ui.page.expect_download() as download_info:
        await ui.page.get_by_role("link", name="Download a backup of the database").click()
    download = await download_info.value
    assert download.suggested_filename.startswith("playchat-")
    await ui.page.reload()
    await expect(backup).to_contain_text(f"downloaded here: {download.suggested_filename}")
    ui.assert_clean()


async def test_status_lists_every_connection_and_each_discord_shard(open_ui: OpenUi) -> None:
    ui = await open_ui()
    away = f"http://127.0.0.1:{closed_port()}"
    await ui.api(
        "POST",
        "/api/models/presets",
        json_body={"label": "Office box", "value": "ollama/other-model", "api_base": away},
    )
    await ui.api("POST", "/api/readiness/check")
    await ui.login()
    card = ui.page.locator('#status-components [data-component="connections"]')
    await expect(card.locator("h3")).to_contain_text("Model connections")
    # A dead connection nobody uses warns on the card; it does not degrade the bot's status.
    await expect(card).to_have_attribute("data-state", "ok")
    await expect(card).to_contain_text("Not answering, used by nobody: Office box.")
    office = card.locator('li[data-part="Office box"]')
    await expect(office).to_have_attribute("data-state", "down")
    await expect(office).to_contain_text(f"The model server at {away} is not reachable")
    await expect(office).to_contain_text("connection refused")
    working = card.locator('li[data-state="ok"]')
    await expect(working).to_have_count(1)  # the model from .env, as its first connection
    await expect(working).to_contain_text("Working")

    # The sharded bot's report reaches the open page live: one shard down degrades Discord.
    links = [ShardLink(0, True, 0.042), ShardLink(1, False)]
    await ui.admin.services.readiness.record(
        "discord", discord_check(connected=False, ever=True, servers=4, latency=None, shards=links)
    )
    discord = ui.page.locator('#status-components [data-component="discord"]')
    await expect(discord).to_have_attribute("data-state", "degraded")
    await expect(discord.locator(".state").first).to_have_text("Degraded")
    await expect(discord.locator('li[data-part="Shard 0"]')).to_contain_text("latency 42 ms")
    shard_one = discord.locator('li[data-part="Shard 1"]')
    await expect(shard_one).to_have_attribute("data-state", "down")
    await expect(shard_one).to_contain_text("not connected")
    await expect(discord).to_contain_text("1 of 2")
    await ui.shoot("status-connections-shards")
    ui.assert_clean()
