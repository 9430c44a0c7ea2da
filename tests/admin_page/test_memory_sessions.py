"""Memory and sessions on the page: per-session summaries and knowledge, export, import."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import expect

from bot.store.repos.knowledge import KnowledgeRepository, KnowledgeSource
from tests.admin_page.conftest import Ui
from tests.conftest import LOCAL


async def seed(ui: Ui) -> tuple[str, str]:
    repos = ui.admin.services.repos
    trip = await repos.sessions.create(LOCAL, title="Trip planning")
    other = await repos.sessions.create(LOCAL, title="Cooking")
    first = await repos.messages.add(LOCAL, trip.id, "user", "Where should we go in Kyoto?")
    await repos.messages.add(LOCAL, trip.id, "assistant", "Arashiyama in autumn.")
    await repos.memories.summarize_messages(
        LOCAL, trip.id, [first.id], "They plan an autumn Kyoto trip."
    )
    cooking = await repos.messages.add(LOCAL, other.id, "user", "How long do eggs boil?")
    await repos.memories.summarize_messages(
        LOCAL, other.id, [cooking.id], "Asked about boiled eggs."
    )
    knowledge = KnowledgeRepository(ui.admin.services.db)
    await knowledge.add(
        LOCAL,
        query="kyoto autumn leaves",
        title="Kyoto autumn guide",
        summary="Best from mid-November.",
        session_id=trip.id,
        md_path=None,
        sources=[
            KnowledgeSource("Guide", "https://example.com/kyoto"),
            KnowledgeSource("Bad", "javascript:window.__pwned=1"),
        ],
    )
    await knowledge.add(
        LOCAL,
        query="eggs",
        title="Egg timing",
        summary="Seven minutes.",
        session_id=other.id,
        md_path=None,
        sources=[],
    )
    return trip.id, other.id


async def test_memory_per_session_with_delete(ui: Ui) -> None:
    trip, _ = await seed(ui)
    await ui.login()
    await ui.go("memory")
    screen = ui.screen("memory")
    summaries = screen.locator("#summary-list > li")
    knowledge = screen.locator("#knowledge-list > li")
    await expect(summaries).to_have_count(2)
    await expect(knowledge).to_have_count(2)

    row = screen.locator(f'#session-table tr[data-id="{trip}"]')
    await expect(row).to_contain_text("Trip planning")
    await row.get_by_role("button", name="Memory").click()
    await expect(screen.locator("#memory-scope")).to_contain_text(trip)
    await expect(summaries).to_have_count(1)
    await expect(summaries).to_contain_text("They plan an autumn Kyoto trip.")
    await expect(knowledge).to_have_count(1)
    await expect(knowledge).to_contain_text("Kyoto autumn guide")
    hrefs = await knowledge.locator("a").evaluate_all("links => links.map(a => a.href)")
    assert hrefs == ["https://example.com/kyoto"], "unsafe source URLs are not links"
    await ui.shoot("memory")

    await summaries.get_by_role("button", name="Delete summary").click()
    await summaries.get_by_role("button", name="Really delete?").click()
    await expect(ui.status).to_contain_text("Summary deleted.")
    await expect(summaries).to_have_count(1)
    await expect(summaries).to_contain_text("No summaries yet.")
    left = await ui.api("GET", "/api/memory/summaries")
    assert [item["summary"] for item in left["items"]] == ["Asked about boiled eggs."]

    await knowledge.get_by_role("button", name="Delete entry").click()
    await knowledge.get_by_role("button", name="Really delete?").click()
    await expect(ui.status).to_contain_text("Knowledge entry deleted.")
    assert [e["title"] for e in (await ui.api("GET", "/api/memory/knowledge"))["items"]] == [
        "Egg timing"
    ]
    await screen.get_by_role("button", name="Show every session").click()
    await expect(knowledge).to_have_count(1)
    await expect(summaries).to_have_count(1)
    ui.assert_clean()


async def test_sessions_export_import_and_delete(ui: Ui, tmp_path: Path) -> None:
    trip, other = await seed(ui)
    await ui.login()
    await ui.go("memory")
    screen = ui.screen("memory")
    row = screen.locator(f'#session-table tr[data-id="{trip}"]')
    async with ui.page.expect_download() as download_info:
        await row.get_by_role("link", name="Export").click()
    download = await download_info.value
    assert download.suggested_filename == f"playchat-session-{trip}.json"
    exported = tmp_path / download.suggested_filename
    await download.save_as(exported)
    document = json.loads(exported.read_text(encoding="utf-8"))
    assert document["session"]["id"] == trip
    assert [m["content"] for m in document["messages"]][:1] == ["Where should we go in Kyoto?"]

    form = screen.get_by_role("form", name="Import a session")
    file_input = form.get_by_label("Exported session (.json)")
    await file_input.set_input_files(str(exported))
    await form.get_by_role("button", name="Import").click()
    await expect(ui.status).to_have_attribute("data-kind", "error")
    await expect(ui.status).to_have_attribute("data-http-status", "409")
    await expect(ui.status).to_contain_text("already exists; import it as a new session instead.")

    await file_input.set_input_files(str(exported))
    await form.get_by_label("Import as a new copy").check()
    await form.get_by_role("button", name="Import").click()
    await expect(ui.status).to_contain_text("Imported as session ")
    await expect(screen.locator("#session-table tbody tr")).to_have_count(3)
    sessions = (await ui.api("GET", "/api/sessions"))["items"]
    assert [s["title"] for s in sessions].count("Trip planning") == 2

    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    await file_input.set_input_files(str(broken))
    await form.get_by_role("button", name="Import").click()
    await expect(ui.status).to_contain_text("broken.json is not a JSON file.")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"hello": "world"}', encoding="utf-8")
    await file_input.set_input_files(str(wrong))
    await form.get_by_role("button", name="Import").click()
    await expect(ui.status).to_have_attribute("data-http-status", "422")

    other_row = screen.locator(f'#session-table tr[data-id="{other}"]')
    await other_row.get_by_role("button", name="Delete").click()
    await other_row.get_by_role("button", name="Really delete?").click()
    await expect(ui.status).to_contain_text('Session "Cooking" deleted.')
    await expect(other_row).to_have_count(0)
    assert (await ui.admin.get(f"/api/sessions/{other}")).status == 404
    ui.assert_clean()
