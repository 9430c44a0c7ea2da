"""Search on the page: a Japanese word found in a message and a note, the match highlighted
with <mark> elements, and the message hit opening its transcript at that message."""

from __future__ import annotations

from playwright.async_api import expect

from tests.admin_page.conftest import Ui

GUILD = "guild:1234567890123456789"


async def test_search_finds_a_japanese_word_and_opens_the_transcript(ui: Ui) -> None:
    services = ui.admin.services
    repos = services.repos
    await services.spaces.ensure(GUILD, "Tokyo Club")
    session = await repos.sessions.create(GUILD, title="Sightseeing")
    for n in range(30):  # the hit sits far down a long transcript
        await repos.messages.add(GUILD, session.id, "user", f"filler {n}")
    hit = await repos.messages.add(GUILD, session.id, "user", "昨日は東京タワーに登った")
    await repos.messages.add(GUILD, session.id, "assistant", "いいですね")
    await services.notes.create(GUILD, "旅行メモ", "東京タワーは333m")

    await ui.enable_axe()
    await ui.login()
    await ui.go("conversations")
    screen = ui.screen("conversations")
    await screen.get_by_label("Search messages, notes and knowledge").fill("東京タワー")
    await screen.get_by_role("button", name="Search", exact=True).click()
    hits = screen.locator("#search-results .search-hit")
    await expect(hits).to_have_count(2)
    kinds = sorted(await hits.evaluate_all("(items) => items.map((li) => li.dataset.kind)"))
    assert kinds == ["messages", "notes"]
    message_hit = screen.locator('#search-results .search-hit[data-kind="messages"]')
    await expect(message_hit.locator("mark")).to_have_text("東京タワー")
    note_hit = screen.locator('#search-results .search-hit[data-kind="notes"]')
    await expect(note_hit).to_contain_text("旅行メモ")
    await expect(note_hit.locator("mark")).to_have_text("東京タワー")
    # The highlight is built from offsets as elements: the snippet holds no parsed markup.
    assert await note_hit.locator(".snippet").evaluate("(el) => el.children.length") == 1

    await message_hit.get_by_role("link", name="Open in transcript").click()
    target = screen.locator(f'#conv-transcript [data-message-id="{hit.id}"]')
    await expect(target).to_be_focused()
    await expect(target).to_be_in_viewport()
    await expect(target).to_contain_text("東京タワーに登った")
    await expect(screen.get_by_label("Server or space")).to_have_value(GUILD)
    assert await ui.axe("search hits and transcript") == []
    await ui.shoot("search")
    ui.assert_clean()
