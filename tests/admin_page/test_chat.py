"""Chat on the page: an answer streams from the loopback model with its tool activity and
sources as Discord shows them, a remembered fact's receipt; the stop button stops reading a long
answer."""

from __future__ import annotations

import re

from playwright.async_api import expect

from tests.admin_page.conftest import OpenUi, Ui
from tests.admin_page.test_conversations import seed_tool_turn
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text, ToolCalls
from tests.ops.conftest import closed_port

GUILD = "guild:1234567890123456789"


async def test_the_chat_streams_an_answer_with_tool_activity_and_sources(ui: Ui) -> None:
    await ui.admin.services.spaces.ensure(GUILD, "Ramen Club")
    await seed_tool_turn(ui)  # registers the tools; its turn is already over
    ui.admin.llm.script(
        ToolCalls([("web_search", {"query": "ramen kyoto"})]),
        Text("# Ramen\nGood."),
        Text("Try the shop near the station.", chunks=4),
    )
    await ui.enable_axe()
    await ui.login()
    await ui.go("chat")
    screen = ui.screen("chat")
    await screen.get_by_label("Chat in space").select_option(GUILD)
    await screen.get_by_label("Message").fill("Where to eat ramen?")
    await screen.get_by_role("button", name="Send").click()
    log = screen.locator("#chat-log")
    answer = log.locator(".msg-assistant").last
    await expect(answer.locator(".text")).to_have_text("Try the shop near the station.")
    tool = answer.locator('.tool-call[data-tool="web_search"]')
    await expect(tool).to_have_attribute("data-status", "done")
    await expect(tool).to_contain_text("✓")
    source = answer.locator(".sources").get_by_role("link", name="Kyoto weather")
    await expect(source).to_have_attribute("rel", "noopener noreferrer")
    await expect(answer).to_have_attribute("data-message-id", re.compile(r"^\d+$"))
    await expect(screen.locator("#chat-session")).to_contain_text("Ramen Club")
    await expect(screen.get_by_role("button", name="Stop")).to_be_disabled()
    sessions = await ui.admin.services.repos.sessions.list(GUILD)
    assert len(sessions) == 1, "the turn ran in the chosen space"
    assert await ui.axe("chat") == []
    await ui.shoot("chat")
    ui.assert_clean()


async def test_stop_ends_a_long_answer(ui: Ui) -> None:
    ui.admin.llm.script(Text(" ".join(f"word{n}" for n in range(400)), delay=0.02))
    await ui.login()
    await ui.go("chat")
    screen = ui.screen("chat")
    await screen.get_by_label("Chat in space").select_option(LOCAL)
    await screen.get_by_label("Message").fill("Tell me a long story")
    await screen.get_by_role("button", name="Send").click()
    answer = screen.locator("#chat-log .msg-assistant")
    await expect(answer.locator(".text")).to_contain_text("word3")
    await screen.get_by_role("button", name="Stop").click()
    await expect(answer.locator(".stopped")).to_contain_text("Stopped.")
    await expect(screen.get_by_role("button", name="Send")).to_be_enabled()
    assert "word399" not in await answer.locator(".text").inner_text()
    ui.assert_clean()


async def test_a_failed_turn_shows_the_operator_the_address_and_a_link_to_status(
    open_ui: OpenUi,
) -> None:
    port = closed_port()
    ui = await open_ui(llm_api_base=f"http://127.0.0.1:{port}")
    await ui.login()
    await ui.go("chat")
    screen = ui.screen("chat")
    await screen.get_by_label("Chat in space").select_option(LOCAL)
    await screen.get_by_label("Message").fill("hello?")
    await screen.get_by_role("button", name="Send").click()
    error = screen.locator("#chat-log .turn-error")
    await expect(error).to_contain_text(f"The model server at http://127.0.0.1:{port} is not")
    await expect(error).to_contain_text("LLM_API_BASE")
    await expect(error).not_to_contain_text("not reachable right now")
    await expect(error.get_by_role("link", name="See Status.")).to_have_attribute("href", "#status")


async def test_a_request_to_remember_shows_its_receipt_with_the_answer(ui: Ui) -> None:
    ui.admin.llm.script(Text("Noted."))
    await ui.login()
    await ui.go("chat")
    screen = ui.screen("chat")
    await screen.get_by_label("Chat in space").select_option(LOCAL)
    await screen.get_by_label("Message").fill("remember that I like green tea")
    await screen.get_by_role("button", name="Send").click()
    answer = screen.locator("#chat-log .msg-assistant").last
    await expect(answer.locator(".text")).to_have_text("Noted.")
    [fact] = await ui.admin.services.members.list(LOCAL, "local")
    receipt = f"🧠 Remembered as fact #{fact.id}: I like green tea"
    await expect(answer.locator(".remembered")).to_have_text(receipt)
    ui.assert_clean()
