"""Notes on the page: create, edit, sections, drag-and-drop and keyboard reorder, safe preview."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Locator, expect

from tests.admin_page.conftest import Ui

PROBE = Path(__file__).with_name("markdown_probe.js")
HOSTILE = """# Heading
**bold** and [safe](https://example.com/x) and [bad](javascript:window.__pwned=1)
<script>window.__pwned = 1</script>
<img src=x onerror="window.__pwned=1">
[data](data:text/html,<script>parent.__pwned=1</script>) <https://example.org/auto>
- item one
- item `code`
"""


def tab(ui: Ui, title: str) -> Locator:
    return ui.page.locator(".note-tab", has_text=title)


async def titles_in_api_order(ui: Ui) -> list[tuple[str, str]]:
    pages = (await ui.api("GET", "/api/notes"))["pages"]
    return [(page["title"], page["section"]) for page in pages]


async def create_in_page(ui: Ui, title: str, section: str) -> None:
    form = ui.page.get_by_role("form", name="New note page")
    await form.get_by_label("New page title").fill(title)
    await form.get_by_label("Section").fill(section)
    await form.get_by_role("button", name="Create page").click()
    await expect(ui.status).to_contain_text(f'Created page "{title}".')
    await expect(tab(ui, title)).to_have_attribute("aria-current", "true")


async def test_create_edit_and_reorder_by_drag_and_drop(ui: Ui) -> None:
    await ui.login()
    await ui.go("notes")  # Status is the landing screen
    await expect(ui.page.locator("#note-tabs")).to_contain_text("No note pages yet")
    await create_in_page(ui, "Alpha", "Work")
    await create_in_page(ui, "Beta", "Work")
    assert await titles_in_api_order(ui) == [("Alpha", "Work"), ("Beta", "Work")]

    # Edit the selected page (Beta): the tab marks unsaved changes until Save.
    content = ui.page.get_by_label("Content (Markdown)")
    await content.fill("Remember **milk**")
    await expect(tab(ui, "Beta")).to_contain_text("(unsaved)")
    await expect(ui.page.locator("#note-preview strong")).to_have_text("milk")
    await ui.page.get_by_role("button", name="Save", exact=True).click()
    await expect(ui.status).to_contain_text('Saved "Beta".')
    await expect(tab(ui, "Beta")).not_to_contain_text("(unsaved)")
    pages = (await ui.api("GET", "/api/notes"))["pages"]
    assert pages[1]["content"] == "Remember **milk**"

    await tab(ui, "Beta").drag_to(tab(ui, "Alpha"))
    await expect(ui.status).to_contain_text("New order saved.")
    assert await titles_in_api_order(ui) == [("Beta", "Work"), ("Alpha", "Work")]
    await expect(ui.page.locator(".note-tab")).to_have_text(["Beta", "Alpha"])

    # Dropping on another section's tab moves the page into that section too.
    await ui.api("POST", "/api/notes", json_body={"title": "Gamma", "section": "Home"})
    await ui.page.get_by_role("button", name="Reload").click()
    await expect(tab(ui, "Gamma")).to_be_visible()
    await tab(ui, "Gamma").drag_to(tab(ui, "Beta"))
    await expect(ui.page.locator(".note-tab")).to_have_text(["Gamma", "Beta", "Alpha"])
    assert await titles_in_api_order(ui) == [("Gamma", "Work"), ("Beta", "Work"), ("Alpha", "Work")]

    # Dropping on a section's name puts the page at the end of that section.
    await ui.api("POST", "/api/notes", json_body={"title": "Delta", "section": "Home"})
    await ui.page.get_by_role("button", name="Reload").click()
    await expect(tab(ui, "Delta")).to_be_visible()
    await tab(ui, "Beta").drag_to(ui.page.locator('.note-section-head[data-section="Home"]'))
    await expect(ui.page.locator(".note-tab")).to_have_text(["Gamma", "Alpha", "Delta", "Beta"])
    assert await titles_in_api_order(ui) == [
        ("Gamma", "Work"),
        ("Alpha", "Work"),
        ("Delta", "Home"),
        ("Beta", "Home"),
    ]
    await ui.shoot("notes")
    ui.assert_clean()


async def test_keyboard_reorder_section_rename_and_delete(ui: Ui) -> None:
    for title, section in (("One", "A"), ("Two", "A"), ("Three", "B")):
        await ui.api("POST", "/api/notes", json_body={"title": title, "section": section})
    await ui.login()
    await ui.go("notes")  # Status is the landing screen
    await tab(ui, "One").focus()
    await ui.page.keyboard.press("Enter")
    await expect(tab(ui, "One")).to_have_attribute("aria-current", "true")
    left = ui.page.get_by_role("button", name="← Move left")
    right = ui.page.get_by_role("button", name="Move right →")
    await expect(left).to_be_disabled()

    await right.focus()
    await ui.page.keyboard.press("Enter")
    await expect(ui.status).to_contain_text("New order saved.")
    assert await titles_in_api_order(ui) == [("Two", "A"), ("One", "A"), ("Three", "B")]
    await expect(right).to_be_focused()
    await ui.page.keyboard.press("Enter")  # across the section boundary: joins section B
    await expect(ui.page.get_by_label("Section", exact=True).last).to_have_value("B")
    assert await titles_in_api_order(ui) == [("Two", "A"), ("One", "B"), ("Three", "B")]

    rename = ui.page.get_by_role("button", name="Rename section A")
    await rename.click()
    field = ui.page.get_by_label("New name for section A")
    await field.fill("Alpha team")
    await field.press("Enter")
    await expect(ui.status).to_contain_text("Section renamed on 1 page.")
    await expect(ui.page.locator(".note-section-head h3").first).to_have_text("Alpha team")
    assert (await titles_in_api_order(ui))[0] == ("Two", "Alpha team")

    await ui.page.get_by_role("button", name="Delete page").click()
    await ui.page.get_by_role("button", name="Really delete?").click()
    await expect(ui.status).to_contain_text("Page deleted.")
    assert [title for title, _ in await titles_in_api_order(ui)] == ["Two", "Three"]
    ui.assert_clean()


async def test_a_refused_reorder_shows_the_api_error_and_reloads(ui: Ui) -> None:
    for title in ("First", "Second"):
        await ui.api("POST", "/api/notes", json_body={"title": title})
    await ui.login()
    await ui.go("notes")  # Status is the landing screen
    await expect(ui.page.locator(".note-tab")).to_have_count(2)
    # Another admin adds a page meanwhile: this page's order no longer lists every page.
    await ui.api("POST", "/api/notes", json_body={"title": "Meanwhile"})
    await tab(ui, "Second").drag_to(tab(ui, "First"))
    await expect(ui.status).to_have_attribute("data-kind", "error")
    await expect(ui.status).to_contain_text("must list every note page id exactly once")
    await expect(ui.status).to_have_attribute("data-http-status", "422")
    await expect(tab(ui, "Meanwhile")).to_be_visible()
    assert [t for t, _ in await titles_in_api_order(ui)] == ["First", "Second", "Meanwhile"]

    # The API's validation message reaches the user even past the form's own limits.
    title_field = ui.page.get_by_label("Title", exact=True)
    await title_field.evaluate("input => input.removeAttribute('maxlength')")
    await title_field.fill("x" * 101)
    await ui.page.get_by_role("button", name="Save", exact=True).click()
    await expect(ui.status).to_contain_text("Please check: Title — ")
    await expect(ui.page.locator(".note-form .field-error")).to_contain_text("100 characters")
    await expect(title_field).to_have_attribute("aria-invalid", "true")
    ui.assert_clean()


async def test_a_hostile_note_renders_inert(ui: Ui) -> None:
    await ui.api(
        "POST",
        "/api/notes",
        json_body={"title": '<img src=x onerror="window.__pwned=1">', "content": HOSTILE},
    )
    await ui.login()
    await ui.go("notes")  # Status is the landing screen
    await expect(ui.page.locator(".note-tab")).to_have_text(
        '<img src=x onerror="window.__pwned=1">'
    )
    preview = ui.page.locator("#note-preview")
    await expect(preview.locator("h1")).to_have_text("Heading")
    await expect(preview.locator("strong")).to_have_text("bold")
    await expect(preview.locator("li")).to_have_count(2)
    await expect(preview.locator("li code")).to_have_text("code")
    await expect(preview).to_contain_text("<script>window.__pwned = 1</script>")
    await expect(preview).to_contain_text('<img src=x onerror="window.__pwned=1">')
    hrefs = await preview.locator("a").evaluate_all("links => links.map(a => a.href)")
    assert hrefs == ["https://example.com/x", "https://example.org/auto"]
    for selector in ("script", "img", "iframe", "[onerror]", "[onclick]", "[style]"):
        assert await ui.page.locator(f"#screen-notes {selector}").count() == 0, selector
    await preview.get_by_text("bad", exact=True).click()
    await preview.get_by_text("data", exact=True).click()

    # Typing a payload into the editor only ever shows it as text in the live preview.
    await ui.page.get_by_label("Content (Markdown)").fill('<svg onload="window.__pwned=1"></svg>')
    await expect(preview).to_have_text('<svg onload="window.__pwned=1"></svg>')
    assert await ui.page.locator("#screen-notes svg").count() == 0
    assert await ui.page.evaluate("window.__pwned") is None
    ui.assert_clean()


async def test_the_markdown_renderer_only_emits_whitelisted_markup(ui: Ui) -> None:
    await ui.open()
    result = await ui.page.evaluate(PROBE.read_text(encoding="utf-8"))
    assert result["safe"] == [None] * 8 + [
        "https://ok.example/a?b=c",
        "mailto:someone@example.com",
        "http://ok.example/",
    ]
    assert result["problems"] == []
    assert result["tags"] == [
        "blockquote", "p", "ol", "li", "p", "li", "p", "ul", "li", "p", "pre", "code", "hr", "p",
        "del", "em",
    ]  # fmt: skip
    assert result["code"] == "<b>x</b>"
    assert result["last"] == "gone em a*b"


async def test_the_markdown_renderer_stays_fast_on_hostile_input(ui: Ui) -> None:
    await ui.open()
    timings = await ui.page.evaluate(
        r"""async () => {
          const md = await import('/static/js/markdown.js');
          const inputs = ['*a _b `c [d '.repeat(8000), '*'.repeat(100000), '['.repeat(100000),
            '<'.repeat(100000), '[a](http://x '.repeat(8000), '- a\n  '.repeat(15000),
            '> '.repeat(50000), '**a *b _c ~~d '.repeat(7000)];
          return inputs.map((text) => {
            const started = performance.now();
            md.renderMarkdown(text.slice(0, 100000));
            return performance.now() - started;
          });
        }"""
    )
    # Linear work is ~10-150 ms each here; quadratic behaviour would take many seconds.
    assert max(timings) < 2000, timings
