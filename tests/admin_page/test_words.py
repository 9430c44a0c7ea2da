"""Word pool and tags on the page: a channel picked by name shows its pool with counts and its
recent tags; another channel shows its own."""

from __future__ import annotations

from playwright.async_api import expect

from bot.store.repos.directory import ChannelSeen
from tests.admin_page.conftest import Ui

GUILD = "guild:100"
RAMEN = 1200000000000000001
CAMERA = 1200000000000000002


async def test_a_channel_by_name_shows_its_word_pool_and_tags(ui: Ui) -> None:
    services = ui.admin.services
    repos = services.repos
    await services.spaces.ensure(GUILD, "Hobby Club")
    await repos.directory.replace_server(
        GUILD,
        [ChannelSeen(RAMEN, "ramen", "text", position=0), ChannelSeen(CAMERA, "camera", "text", 1)],
    )
    await repos.word_pool.add(GUILD, RAMEN, ["豚骨", "豚骨", "醤油"], keep=50)
    session = await repos.sessions.create(
        GUILD, title="t", source="discord", discord_channel_id=RAMEN
    )
    message = await repos.messages.add(GUILD, session.id, "user", "豚骨が好き")
    await repos.tags.add_message_tags(GUILD, message.id, ["豚骨", "ラーメン"])

    await ui.enable_axe()
    await ui.login()
    await ui.go("words")
    screen = ui.screen("words")
    pick = screen.get_by_label("Channel")
    await expect(pick.locator("optgroup")).to_have_attribute("label", "Hobby Club")
    await pick.select_option(label="#ramen")
    pool = screen.locator("#word-pool li")
    await expect(pool).to_have_count(2)
    await expect(pool.filter(has_text="豚骨")).to_contain_text("2")
    await expect(screen.locator("#channel-tags li")).to_have_text(
        ["ラーメン", "豚骨"], ignore_case=True
    )
    assert await ui.axe("words") == []
    await ui.shoot("words")

    await pick.select_option(label="#camera")
    await expect(screen).to_contain_text("The pool is empty.")
    await expect(screen).to_contain_text("No tags yet.")
    ui.assert_clean()
