"""Member memory: detection of "remember that …", caps, forget, off, shared facts, isolation."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.errors import ValidationError
from bot.memory.member_memory import (
    LOCAL_MEMBER,
    MAX_FACT_CHARS,
    MemberMemory,
    MemoryFullError,
    MemoryOffError,
    member_of,
    request_fact,
)
from bot.store.engine.database import Database
from bot.store.erase.operations import MemberErasure
from bot.store.repos.member_facts import MemberFactRepository

A, B = "guild:1", "guild:2"
X, Y = "111", "222"


@pytest.fixture
async def db(suite_database_url: str) -> AsyncIterator[Database]:
    database = await Database.connect(suite_database_url)
    yield database
    await database.close()


@pytest.fixture
def members(db: Database) -> MemberMemory:
    return MemberMemory(MemberFactRepository(db), MemberErasure(db), cap=3)


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("remember that my cat is Mochi-Kinako", "my cat is Mochi-Kinako"),
        ("Remember that I am moving to Sapporo in March.", "I am moving to Sapporo in March"),
        ("Please remember: I live in Sapporo.", "I live in Sapporo"),
        ("Hi! Can you remember that I like tea?", "I like tea"),
        ("ok.\nremember that the meeting is at 9", "the meeting is at 9"),
        ("猫の名前はモチキナコって覚えておいて", "猫の名前はモチキナコ"),
        ("私はコーヒー派だということを覚えて！", "私はコーヒー派だ"),
        ("来月札幌に引っ越すと覚えておいてね", "来月札幌に引っ越す"),
        ("覚えておいて：札幌に引っ越す", "札幌に引っ越す"),
        ("これを覚えておいてください: 明日は休み", "明日は休み"),
    ],
)
def test_a_request_to_remember_gives_its_fact(text: str, fact: str) -> None:
    assert request_fact(text) == fact


@pytest.mark.parametrize(
    "text",
    [
        "",
        "do you remember my cat?",
        "I remember that day well",
        "remember that",
        "What is the name of my cat?",
        "私の猫を覚えてる？",
        "猫の名前を覚えていますか",
        "覚えてる？",
    ],
)
def test_questions_and_mentions_of_remembering_are_not_requests(text: str) -> None:
    assert request_fact(text) is None


def test_the_member_of_a_turn() -> None:
    assert member_of(A, X) == X
    assert member_of("local:club", None) == LOCAL_MEMBER
    assert member_of(A, None) is None
    assert member_of("dm:5", None) is None


async def test_remember_list_and_facts_for_turn(members: MemberMemory) -> None:
    await members.remember(A, X, "  my cat is\nMochi-Kinako ", "request", member_name="xen")
    shared = await members.remember(A, Y, "team lunch is on Fridays", "tool", shared=True)
    await members.remember(A, Y, "private to Y", "tool")
    [fact] = await members.list(A, X)
    assert fact.fact == "my cat is Mochi-Kinako" and fact.member_name == "xen"
    turn = await members.facts_for_turn(A, X)
    assert [f.fact for f in turn.own] == ["my cat is Mochi-Kinako"]
    assert [f.id for f in turn.shared] == [shared.id]
    other = await members.facts_for_turn(A, Y)
    assert "my cat is Mochi-Kinako" not in [f.fact for f in other.own + other.shared]
    assert not await members.facts_for_turn(B, X), "another space sees nothing"


async def test_caps_on_count_and_length(members: MemberMemory) -> None:
    with pytest.raises(ValidationError, match="at most 300 characters"):
        await members.remember(A, X, "x" * (MAX_FACT_CHARS + 1), "tool")
    with pytest.raises(ValidationError, match="cannot be empty"):
        await members.remember(A, X, " \n ", "tool")
    for n in range(3):
        await members.remember(A, X, f"fact {n}", "tool")
    with pytest.raises(MemoryFullError, match="At most 3 facts"):
        await members.remember(A, X, "one more", "tool")
    await members.remember(B, X, "another space has its own cap", "tool")


async def test_forget_one_and_all(members: MemberMemory) -> None:
    one = await members.remember(A, X, "one", "tool")
    await members.remember(A, X, "two", "tool")
    theirs = await members.remember(A, Y, "theirs", "tool")
    assert not await members.forget(A, X, theirs.id)
    assert await members.forget(A, X, one.id)
    assert not await members.forget(A, X, one.id)
    assert [f.fact for f in await members.list(A, X)] == ["two"]
    assert await members.forget_all(A, X) == 1
    assert await members.list(A, X) == []
    assert [f.fact for f in await members.list(A, Y)] == ["theirs"]


async def test_off_saves_nothing_until_on(members: MemberMemory) -> None:
    await members.set_enabled(A, X, False)
    assert not await members.enabled(A, X)
    with pytest.raises(MemoryOffError):
        await members.remember(A, X, "my cat is Mochi-Kinako", "request")
    assert await members.list(A, X) == []
    await members.remember(B, X, "other spaces are not switched", "tool")
    await members.set_enabled(A, X, True)
    await members.remember(A, X, "my cat is Mochi-Kinako", "request")
    assert len(await members.list(A, X)) == 1


async def test_only_the_owner_shares_a_fact(members: MemberMemory) -> None:
    fact = await members.remember(A, X, "birthday in May", "tool")
    assert not await members.share(A, Y, fact.id, True)
    assert (await members.facts_for_turn(A, Y)).shared == []
    assert await members.share(A, X, fact.id, True)
    assert [f.fact for f in (await members.facts_for_turn(A, Y)).shared] == ["birthday in May"]
