"""Member memory on the page: a space's members with their facts; a fact deleted, a member's
facts forgotten and a member erased, each with a second press, as the API and store show."""

from __future__ import annotations

from playwright.async_api import expect

from bot.memory.member_memory import ERASED_PLACEHOLDER
from tests.admin_page.conftest import Ui

GUILD = "guild:100"
AIKO = "1300000000000000848"
BEN = "1300000000000000849"


async def test_members_facts_can_be_deleted_forgotten_and_a_member_erased(ui: Ui) -> None:
    services = ui.admin.services
    await services.spaces.ensure(GUILD, "Tabletop Club")
    members = services.members
    cat = await members.remember(GUILD, AIKO, "My cat is Mochi", "request", member_name="Aiko")
    await members.remember(GUILD, AIKO, "Moving to Sapporo in March", "tool", member_name="Aiko")
    await members.remember(GUILD, BEN, "Plays the bass", "request", member_name="Ben")
    session = await services.repos.sessions.create(GUILD, title="t", source="discord")
    said = await services.repos.messages.add(
        GUILD, session.id, "user", "my cat is called Mochi", author_id=AIKO, author_name="Aiko"
    )

    await ui.enable_axe()
    await ui.login()
    await ui.go("members")
    screen = ui.screen("members")
    await screen.get_by_label("Space to show").select_option(GUILD)
    aiko = screen.locator(f'li[data-member="{AIKO}"]')
    ben = screen.locator(f'li[data-member="{BEN}"]')
    await expect(aiko).to_contain_text("Aiko")
    await expect(aiko).to_contain_text(f"{AIKO} · 2 facts")  # the id whole, as a string
    await expect(aiko.locator("li[data-fact]")).to_have_count(2)
    await expect(ben.locator("li[data-fact]")).to_contain_text(["Plays the bass"])
    assert await ui.axe("members") == []

    delete = aiko.get_by_role("button", name=f"Delete fact {cat.id}")
    await delete.click()
    await expect(delete).to_have_text("Press again to delete")
    await delete.click()
    await expect(ui.status).to_contain_text("Fact deleted.")
    await expect(aiko.locator("li[data-fact]")).to_have_count(1)
    assert [f.fact for f in await members.list(GUILD, AIKO)] == ["Moving to Sapporo in March"]

    forget = ben.get_by_role("button", name="Forget all facts of Ben")
    await forget.click()
    await expect(forget).to_have_text("Press again to forget all")
    await forget.click()
    await expect(ui.status).to_contain_text("Forgot Ben's facts.")
    assert await members.list(GUILD, BEN) == []

    erase = aiko.get_by_role("button", name="Erase member Aiko")
    await erase.click()
    await expect(erase).to_have_text("Press again to erase Aiko")
    await erase.click()
    await expect(ui.status).to_contain_text("Erased Aiko")
    await expect(screen.locator(f'li[data-member="{AIKO}"]')).to_have_count(0)
    assert await members.list(GUILD, AIKO) == []
    stored = await services.repos.messages.all_for_session(GUILD, session.id)
    assert [(m.id, m.content) for m in stored] == [(said.id, ERASED_PLACEHOLDER)]
    ui.assert_clean()
