"""Conversations on the page: spaces → channels (by name) → threads → a transcript with its
tool calls (✓ / ✗ with the reason), sources, summaries and archived messages."""

from __future__ import annotations

import json

from playwright.async_api import expect

from bot.store.repos.directory import ChannelSeen
from bot.tools.web_search import web_search_sources
from tests.admin_page.conftest import Ui
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text, ToolCalls

GUILD = "guild:1234567890123456789"
CHANNEL = 1200000000000000001
THREAD = 1300000000000000001


async def seed_tool_turn(ui: Ui) -> str:
    """A turn through the engine in which the loopback LLM calls one tool that works (with a
    source) and one that fails; returns the session id."""

    async def web_search(query: str) -> str:
        """Search the web.

        Args:
            query: What to look for.
        """
        return json.dumps([{"title": "Kyoto weather", "href": "https://weather.example/kyoto"}])

    async def broken(query: str) -> str:
        """Always fails.

        Args:
            query: Anything.
        """
        raise RuntimeError("the service is down")

    services = ui.admin.services
    services.registry.register(web_search, sources=web_search_sources)
    services.registry.register(broken)
    ui.admin.llm.script(
        ToolCalls([("web_search", {"query": "kyoto weather"}), ("broken", {"query": "x"})]),
        Text("# Kyoto weather\nSunny all day."),
        Text("It is sunny in Kyoto."),
    )
    reply = await ui.admin.post("/api/chat/stream", {"message": "weather in Kyoto?"})
    assert reply.status == 200, reply.text
    first = json.loads(reply.text.split("\n\n")[0][len("data: ") :])
    return str(first["value"])


async def test_a_transcript_shows_tool_calls_and_their_sources(ui: Ui) -> None:
    session_id = await seed_tool_turn(ui)
    await ui.enable_axe()
    await ui.login()
    await ui.go("conversations")
    screen = ui.screen("conversations")
    await screen.get_by_label("Server or space").select_option(LOCAL)
    await screen.locator("#conv-channels").get_by_role("button", name="Outside Discord").click()
    await screen.locator("#conv-threads button.pick").first.click()
    transcript = screen.locator("#conv-transcript")
    answer = transcript.locator(".msg-assistant")
    await expect(answer).to_contain_text("It is sunny in Kyoto.")
    ok = answer.locator('.tool-call[data-tool="web_search"]')
    await expect(ok).to_contain_text("✓")
    link = ok.get_by_role("link", name="Kyoto weather")
    await expect(link).to_have_attribute("href", "https://weather.example/kyoto")
    await expect(link).to_have_attribute("rel", "noopener noreferrer")
    failed = answer.locator('.tool-call[data-tool="broken"]')
    await expect(failed).to_contain_text("✗ failed")
    await expect(failed.locator(".reason")).not_to_be_empty()
    assert session_id
    assert await ui.axe("transcript") == []
    await ui.shoot("conversations-tool-calls")
    ui.assert_clean()


async def test_channels_by_name_threads_summaries_and_archived_messages(ui: Ui) -> None:
    repos = ui.admin.services.repos
    await ui.admin.services.spaces.ensure(GUILD, "Ramen Club")
    await repos.directory.upsert(GUILD, ChannelSeen(CHANNEL, "ramen-talk", "text"))
    session = await repos.sessions.create(
        GUILD,
        title="Which broth?",
        source="discord",
        discord_channel_id=THREAD,
        parent_channel_id=CHANNEL,
    )
    said = [
        await repos.messages.add(GUILD, session.id, role, text)
        for role, text in (
            ("user", "tonkotsu or shoyu?"),
            ("assistant", "Tonkotsu, always."),
            ("user", "and miso?"),
            ("assistant", "Miso in winter."),
        )
    ]
    await repos.memories.summarize_messages(
        GUILD, session.id, [said[0].id, said[1].id], "They argued about broth."
    )
    await ui.login()
    await ui.go("conversations")
    screen = ui.screen("conversations")
    await screen.get_by_label("Server or space").select_option(GUILD)
    channel = screen.locator("#conv-channels").get_by_role("button", name="#ramen-talk")
    await channel.click()
    await expect(channel).to_have_attribute("aria-current", "true")
    await screen.locator("#conv-threads").get_by_role("button", name="Which broth?").click()
    transcript = screen.locator("#conv-transcript")
    summary = transcript.locator(".summary")
    await expect(summary).to_contain_text("They argued about broth.")
    await expect(summary).to_contain_text(f"covers 2 messages, #{said[0].id}–#{said[1].id}")
    archived = transcript.locator(".msg.archived")
    await expect(archived).to_have_count(2)
    await expect(archived.first).to_contain_text("Archived")
    await expect(transcript.locator(".msg:not(.archived)")).to_have_count(2)
    ui.assert_clean()


async def test_a_long_transcript_opens_at_its_end_and_loads_earlier_pages(ui: Ui) -> None:
    repos = ui.admin.services.repos
    session = await repos.sessions.create(LOCAL, title="A very long chat")
    said = [
        (await repos.messages.add(LOCAL, session.id, "user", f"line {n}")).id for n in range(230)
    ]
    requests: list[str] = []
    ui.page.on("request", lambda r: requests.append(r.url) if "/transcript" in r.url else None)
    await ui.login()
    await ui.go("conversations")
    screen = ui.screen("conversations")
    await screen.get_by_label("Server or space").select_option(LOCAL)
    await screen.locator("#conv-channels").get_by_role("button", name="Outside Discord").click()
    await screen.locator("#conv-threads").get_by_role("button", name="A very long chat").click()
    transcript = screen.locator("#conv-transcript")
    messages = transcript.locator(".msg")
    # The newest page only: the last message is there, the first is not loaded.
    await expect(messages).to_have_count(100)
    await expect(messages.last).to_contain_text("line 229")
    await expect(messages.first).to_contain_text("line 130")
    assert len(requests) == 1 and "latest=true" in requests[0]

    earlier = transcript.get_by_role("button", name="Load earlier messages")
    await earlier.click()
    await expect(messages).to_have_count(200)
    await expect(messages.first).to_contain_text("line 30")
    await expect(earlier).to_be_focused()  # the reader's place: more is still there
    assert f"before={said[130]}" in requests[-1]

    await ui.page.keyboard.press("Enter")  # the last page, by keyboard
    await expect(messages).to_have_count(230)
    await expect(messages.first).to_contain_text("line 0")
    await expect(earlier).to_have_count(0)
    await expect(transcript.locator(f'[data-message-id="{said[30]}"]')).to_be_focused()
    ids = await messages.evaluate_all("(items) => items.map((li) => Number(li.dataset.messageId))")
    assert ids == said, "every message once, in order"
    ui.assert_clean()


async def test_a_call_that_asked_first_shows_its_decision(ui: Ui) -> None:
    admin = ui.admin
    changed = await admin.put("/api/settings", {"values": {"confirm_note_writes": True}})
    assert changed.status == 200, changed.text
    admin.llm.script(
        ToolCalls([("write_note", {"title": "Plan", "content": "tea", "mode": "create"})]),
        Text("Nobody allowed it."),
    )
    reply = await admin.post("/api/chat/stream", {"message": "note the plan"})
    assert reply.status == 200, reply.text
    await ui.login()
    await ui.go("conversations")
    screen = ui.screen("conversations")
    await screen.get_by_label("Server or space").select_option(LOCAL)
    await screen.locator("#conv-channels").get_by_role("button", name="Outside Discord").click()
    await screen.locator("#conv-threads button.pick").first.click()
    call = screen.locator('#conv-transcript .tool-call[data-tool="write_note"]')
    await expect(call.locator(".approval")).to_have_text(" · 🔐 nobody could be asked: not run")
    await expect(call).to_contain_text("✗ failed")
    ui.assert_clean()
