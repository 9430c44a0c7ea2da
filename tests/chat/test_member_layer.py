"""The member memory layer: only in a known member's turns, their facts and others' shared
ones, cut within any budget with a counted marker."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.chat.budget.tokens import estimate_tokens
from bot.chat.context import ContextRequest
from bot.chat.layers import MemberFactsLayer
from bot.config import Settings
from bot.memory.member_memory import MemberMemory
from bot.prompts import prompts_for
from bot.store.engine.database import Database
from bot.store.erase.operations import MemberErasure
from bot.store.repos.member_facts import MemberFactRepository

S = "guild:1"
EN = prompts_for("en")


@pytest.fixture
async def members(suite_database_url: str) -> AsyncIterator[MemberMemory]:
    database = await Database.connect(suite_database_url)
    yield MemberMemory(MemberFactRepository(database), MemberErasure(database))
    await database.close()


def _request(member: str | None) -> ContextRequest:
    settings = Settings(_env_file=None, language="en")  # type: ignore[call-arg]
    return ContextRequest(S, "s1", "hi", 1, settings, member_id=member)


async def test_nothing_without_a_member_or_facts(members: MemberMemory) -> None:
    layer = MemberFactsLayer(members)
    assert await layer.draft(_request(None)) is None
    assert await layer.draft(_request("1")) is None
    await members.remember(S, "1", "private", "tool")
    assert await layer.draft(_request(None)) is None, "no member: not even shared facts"


async def test_own_facts_then_shared_ones_of_others(members: MemberMemory) -> None:
    await members.remember(S, "1", "my cat is Mochi", "request")
    await members.remember(S, "2", "team lunch on Fridays", "tool", member_name="bob", shared=True)
    await members.remember(S, "2", "bob's secret", "tool", member_name="bob")
    draft = await MemberFactsLayer(members).draft(_request("1"))
    assert draft is not None
    assert draft.text == "\n".join(
        [
            EN["layer_member_header"],
            "- my cat is Mochi",
            EN["layer_member_shared"],
            "- bob: team lunch on Fridays",
        ]
    )
    other = await MemberFactsLayer(members).draft(_request("2"))
    assert other is not None and "Mochi" not in other.text and "bob's secret" in other.text


@pytest.mark.parametrize("budget", [0, 5, 40, 60, 80, 120, 400])
async def test_a_cut_stays_in_budget_and_counts_what_is_left(
    members: MemberMemory, budget: int
) -> None:
    for n in range(12):
        await members.remember(S, "1", f"fact number {n} about the member, a longer line", "tool")
    draft = await MemberFactsLayer(members).draft(_request("1"))
    assert draft is not None
    text = draft.fit(budget)
    if text is None:
        return
    assert estimate_tokens(text) <= budget
    if text != draft.text:
        shown = text.count("\n- fact number")
        assert text.endswith(EN["layer_member_more"].format(count=12 - shown))
