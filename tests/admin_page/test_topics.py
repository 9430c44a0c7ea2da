"""Topics on the page: a channel's schedule editor, its status and run-now."""

from __future__ import annotations

from datetime import timedelta

from playwright.async_api import expect

from bot.store.repos.directory import ChannelSeen
from tests.admin_page.conftest import Ui

# A real Discord snowflake: larger than JavaScript's exact integers (2**53).
CHANNEL = 1234567890123456789
GUILD = 987654321098765432


async def test_create_a_schedule_see_status_and_run_now(ui: Ui) -> None:
    await ui.login()
    await ui.go("topics")
    screen = ui.screen("topics")
    await expect(screen.locator("#topic-table")).to_contain_text("No channel has a topic schedule")
    await screen.get_by_label("Discord channel id").fill(str(CHANNEL))
    await screen.get_by_role("button", name="Add channel").click()
    editor = screen.locator("#topic-editor")
    await expect(editor).to_contain_text(f"Channel {CHANNEL}")
    await editor.get_by_label("Post after idle (minutes)").fill("30")
    await editor.get_by_label("Time zone").fill("Asia/Tokyo")
    await editor.get_by_label("Cron (periodic posts)").fill("0 9 * * *")
    await editor.get_by_label("Active from").fill("08:30")
    await editor.get_by_label("Language").select_option("en")
    await editor.get_by_label("Guild id").fill(str(GUILD))
    await editor.get_by_role("button", name="Create schedule").click()
    await expect(ui.status).to_contain_text(f"Schedule of channel {CHANNEL} saved.")

    stored = (await ui.api("GET", f"/api/topics/{CHANNEL}"))["channel"]
    # Exact, and as strings (Discord ids pass 2^53).
    assert (stored["channel_id"], stored["guild_id"]) == (str(CHANNEL), str(GUILD))
    assert (stored["idle_minutes"], stored["timezone"], stored["cron"]) == (
        30,
        "Asia/Tokyo",
        "0 9 * * *",
    )
    assert (stored["active_start"], stored["language"], stored["enabled"]) == ("08:30", "en", True)
    await expect(screen.locator(f'#topic-table tr[data-id="{CHANNEL}"]')).to_contain_text("30 min")
    status = screen.locator("#topic-status")
    await expect(status).to_contain_text("An idle check now would")
    await expect(status).to_contain_text("Nothing posted yet.")

    await status.get_by_role("button", name="Run now").click()
    result = screen.locator("#topic-run-result")
    await expect(result).to_contain_text("Not posted:")
    await expect(result).to_contain_text("not connected")
    await ui.shoot("topics")

    # Changing one field sends only that field; a bad value shows the API's refusal.
    await editor.get_by_label("Cron (periodic posts)").fill("every day")
    await editor.get_by_role("button", name="Save schedule").click()
    await expect(ui.status).to_have_attribute("data-kind", "error")
    await expect(ui.status).to_contain_text("crontab")
    await expect(ui.status).to_have_attribute("data-http-status", "422")
    await editor.get_by_label("Cron (periodic posts)").fill("")
    await editor.get_by_label("Enabled").uncheck()
    await editor.get_by_role("button", name="Save schedule").click()
    await expect(ui.status).to_contain_text("saved.")
    stored = (await ui.api("GET", f"/api/topics/{CHANNEL}"))["channel"]
    assert (stored["cron"], stored["enabled"], stored["idle_minutes"]) == (None, False, 30)
    assert stored["guild_id"] == str(GUILD)

    await ui.page.reload()
    await expect(screen).to_be_visible()
    await screen.get_by_role("button", name=f"Edit channel {CHANNEL}").click()
    await expect(editor.get_by_label("Guild id")).to_have_value(str(GUILD))
    await expect(editor.get_by_label("Active from")).to_have_value("08:30")
    ui.assert_clean()


async def test_a_channel_is_picked_by_name_and_shows_its_openers(ui: Ui) -> None:
    services = ui.admin.services
    space = f"guild:{GUILD}"
    await services.spaces.ensure(space, "Ramen Club")
    await services.repos.directory.replace_server(
        space,
        [ChannelSeen(CHANNEL, "ramen-talk", "text"), ChannelSeen(CHANNEL + 1, "rules", "text")],
    )
    await ui.login()
    await ui.go("topics")
    screen = ui.screen("topics")
    await screen.get_by_label("Channel", exact=True).select_option(label="#ramen-talk")
    await screen.get_by_role("button", name="Open channel").click()
    editor = screen.locator("#topic-editor")
    await expect(editor).to_contain_text(f"#ramen-talk (Channel {CHANNEL})")
    # The server comes with the channel: no guild id to type.
    await expect(editor.get_by_label("Guild id")).to_have_value(str(GUILD))
    await editor.get_by_label("Post after idle (minutes)").fill("20")
    await editor.get_by_role("button", name="Create schedule").click()
    await expect(ui.status).to_contain_text(f"Schedule of channel {CHANNEL} saved.")
    stored = (await ui.api("GET", f"/api/topics/{CHANNEL}"))["channel"]
    assert (stored["space_id"], stored["guild_id"], stored["idle_minutes"]) == (
        space,
        str(GUILD),
        20,
    )

    await services.repos.topics.add_post(
        space,
        CHANNEL,
        kind="idle",
        topic="豚骨",
        words=["豚骨"],
        content="豚骨と醤油、どっちが好き？",
        discord_message_id=None,
        posted_at="2026-03-01T09:00:00.000000+00:00",
    )
    await ui.page.reload()
    await expect(screen).to_be_visible()
    row = screen.locator(f'#topic-table tr[data-id="{CHANNEL}"]')
    await expect(row).to_contain_text("#ramen-talk")
    # The server is named beside the channel (#general exists in every server).
    await expect(row.locator("td.server")).to_have_text(f"Ramen Club (guild:{GUILD})")
    await expect(row.locator("td.server")).to_have_attribute("data-label", "Server")
    await expect(row).to_contain_text("豚骨と醤油、どっちが好き？")
    await expect(row.locator("td").nth(7)).not_to_be_empty()
    ui.assert_clean()


async def test_the_topic_table_shows_each_channels_answer_rate(ui: Ui) -> None:
    topics = ui.admin.services.topics
    space = f"guild:{GUILD}"
    now = topics.now()
    await topics.configure(CHANNEL, {"enabled": True}, space=space)
    await topics.configure(CHANNEL + 1, {"enabled": True}, space=space)
    for minutes in (300, 200, 10):  # the last one is still in its 30-minute reply window
        await ui.admin.services.repos.topics.add_post(
            space,
            CHANNEL,
            kind="idle",
            topic="豚骨",
            words=["豚骨"],
            content="豚骨と醤油、どっちが好き？",
            discord_message_id=None,
            posted_at=(now - timedelta(minutes=minutes)).isoformat(timespec="microseconds"),
        )
    await topics.record_activity(space, CHANNEL, at=now - timedelta(minutes=290))
    await ui.login()
    await ui.go("topics")
    screen = ui.screen("topics")
    cell = screen.locator(f'#topic-table tr[data-id="{CHANNEL}"] td.answers')
    await expect(cell).to_have_attribute("data-label", "Answered")
    await expect(cell).to_contain_text("1/3")
    await expect(cell).to_contain_text("50 % · 1 waiting")
    other = screen.locator(f'#topic-table tr[data-id="{CHANNEL + 1}"] td.answers')
    await expect(other).to_have_text("no openers yet")
    await screen.get_by_role("button", name=f"Edit channel {CHANNEL}").click()
    posts = screen.locator("#topic-status .memory-list > li .meta")
    await expect(posts).to_have_count(3)
    assert [text.rsplit(" · ", 1)[-1] for text in await posts.all_inner_texts()] == [
        "no reply yet",
        "no reply yet",
        "answered",
    ], "newest first: the oldest opener was answered"
    ui.assert_clean()
