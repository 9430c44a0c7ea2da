"""Spaces on the page: the selector (server names) filters the notes screen, a note page and a
knowledge entry move to another space, and a space's data is purged after a confirmation that
names it, leaving the other space intact."""

from __future__ import annotations

from playwright.async_api import expect

from tests.admin_page.conftest import Ui
from tests.fakes.llm_server import Text

A = "guild:100"
B = "guild:200"
HITS = [{"title": "Forecast", "href": "https://weather.example/", "body": "Sunny"}]


async def seed(ui: Ui) -> None:
    services = ui.admin.services
    await services.spaces.ensure(A, "Ramen Club")
    await services.spaces.ensure(B, "Camera Club")
    await services.repos.sessions.create(A, title="ramen chat")
    await services.notes.create(A, "Ramen shops", "noon")
    await services.notes.create(B, "Lenses", "primes")
    ui.admin.llm.script(Text("# Ramen weather\n- sunny"))
    assert await services.knowledge.save_search(A, "ramen q", HITS, session_id=None)


async def test_the_selector_filters_notes_and_a_page_moves_to_another_space(ui: Ui) -> None:
    await seed(ui)
    await ui.login()
    await ui.go("notes")  # Status is the landing screen
    tabs = ui.page.locator(".note-tab")
    await expect(tabs).to_have_text(["Ramen shops", "Lenses"])
    # Both spaces on one screen: each section says whose it is.
    await expect(ui.page.locator(".note-section-head .space-name")).to_have_text(
        ["Ramen Club (guild:100)", "Camera Club (guild:200)"]
    )

    selector = ui.page.get_by_label("Space", exact=True)
    await expect(selector.locator("option")).to_contain_text(["All spaces", "Ramen Club"])
    await selector.select_option(label="Camera Club (guild:200)")
    await expect(tabs).to_have_text(["Lenses"])
    await selector.select_option(label="Ramen Club (guild:100)")
    await expect(tabs).to_have_text(["Ramen shops"])

    # A page created while a space is chosen goes to that space.
    form = ui.page.get_by_role("form", name="New note page")
    await form.get_by_label("New page title").fill("Toppings")
    await form.get_by_role("button", name="Create page").click()
    await expect(tabs).to_have_text(["Ramen shops", "Toppings"])
    pages = (await ui.api("GET", "/api/notes", params={"space": A}))["pages"]
    assert [page["title"] for page in pages] == ["Ramen shops", "Toppings"]

    await ui.page.get_by_label("Space to move Toppings to").select_option(B)
    await ui.page.get_by_role("button", name="Move to space").click()
    await expect(ui.status).to_contain_text('Moved "Toppings" to Camera Club (guild:200).')
    await expect(tabs).to_have_text(["Ramen shops"])
    moved = (await ui.api("GET", "/api/notes", params={"space": B}))["pages"]
    assert [page["title"] for page in moved] == ["Lenses", "Toppings"]

    # The other screens follow the choice too.
    await ui.go("memory")
    await expect(ui.page.locator("#session-table tbody tr")).to_have_count(1)
    await expect(ui.page.locator("#session-table")).to_contain_text("ramen chat")
    knowledge = ui.page.locator("#knowledge-list")
    await expect(knowledge).to_contain_text("Ramen weather")
    await knowledge.get_by_label("Space to move Ramen weather to").select_option(B)
    await knowledge.get_by_role("button", name="Move to space").click()
    await expect(ui.status).to_contain_text('Moved "Ramen weather" to Camera Club')
    await expect(knowledge).to_contain_text("No saved knowledge yet.")
    (entry,) = (await ui.api("GET", "/api/memory/knowledge", params={"space": B}))["items"]
    assert entry["md_path"].startswith("web_search/guild_200/")
    ui.assert_clean()


async def test_purge_a_space_after_a_confirmation_that_names_it(ui: Ui) -> None:
    await seed(ui)
    await ui.login()
    await ui.go("spaces")
    rows = ui.page.locator("#space-table tbody tr")
    row_a = rows.filter(has_text="guild:100")
    await expect(row_a).to_contain_text("Ramen Club")

    await row_a.get_by_role("button", name="Delete this space's data…").click()
    dialog = ui.page.get_by_role("alertdialog")
    await expect(dialog).to_contain_text("Delete every record of Ramen Club (guild:100)?")
    await expect(dialog).to_contain_text("1 session(s), 1 note page(s) and 1 knowledge entries")
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(dialog).to_have_count(0)
    assert len((await ui.api("GET", "/api/notes", params={"space": A}))["pages"]) == 1

    await row_a.get_by_role("button", name="Delete this space's data…").click()
    await ui.page.get_by_role("button", name="Delete all data of Ramen Club (guild:100)").click()
    await expect(ui.status).to_contain_text("Deleted the data of Ramen Club (guild:100)")
    await expect(rows.filter(has_text="guild:100")).to_have_count(0)
    await expect(rows.filter(has_text="guild:200")).to_contain_text("Camera Club")

    assert (await ui.api("GET", "/api/notes", params={"space": A}))["pages"] == []
    assert (await ui.api("GET", "/api/memory/knowledge", params={"space": A}))["items"] == []
    web_dir = ui.admin.services.settings().kb_dir / "web_search" / "guild_100"
    assert not web_dir.exists()
    others = (await ui.api("GET", "/api/notes", params={"space": B}))["pages"]
    assert [page["title"] for page in others] == ["Lenses"]
    selector = ui.page.get_by_label("Space", exact=True)
    await expect(selector.locator("option")).not_to_contain_text(["Ramen Club"])
    ui.assert_clean()
