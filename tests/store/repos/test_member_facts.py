"""Member facts and switches on both engines: every read and write stays in its space."""

from __future__ import annotations

from bot.store.engine.database import Database
from bot.store.erase.operations import MemberErasure
from bot.store.repos.member_facts import MemberFactRepository
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository

A, B = "guild:1", "guild:2"
X, Y = "111", "222"


async def test_facts_are_kept_per_space_and_member(db: Database) -> None:
    repo = MemberFactRepository(db)
    cat = await repo.add(A, X, "my cat is Mochi-Kinako", source="request", cap=5)
    await repo.add(A, Y, "likes tea", source="tool", member_name="yui", shared=True, cap=5)
    await repo.add(B, X, "lives in Osaka", source="tool", cap=5)
    assert cat is not None and cat.space_id == A and cat.source == "request"
    assert cat.session_id is None and not cat.shared
    assert [f.fact for f in await repo.of_member(A, X)] == ["my cat is Mochi-Kinako"]
    assert [f.fact for f in await repo.of_member(B, X)] == ["lives in Osaka"]
    shared = await repo.shared_by_others(A, X, 10)
    assert [(f.member_name, f.fact) for f in shared] == [("yui", "likes tea")]
    assert await repo.shared_by_others(B, X, 10) == []
    assert await repo.shared_by_others(A, Y, 10) == [], "one's own facts are not 'others''"


async def test_cap_is_checked_in_the_insert(db: Database) -> None:
    repo = MemberFactRepository(db)
    for n in range(3):
        assert await repo.add(A, X, f"fact {n}", source="tool", cap=3) is not None
    assert await repo.add(A, X, "one too many", source="tool", cap=3) is None
    assert await repo.add(A, Y, "another member", source="tool", cap=3) is not None
    assert await repo.add(B, X, "another space", source="tool", cap=3) is not None


async def test_forget_touches_only_the_owners_facts_in_their_space(db: Database) -> None:
    repo, erasure = MemberFactRepository(db), MemberErasure(db)

    async def forget(space: str, member: str, fact_id: int | None) -> int:
        forgot = await erasure.forget(
            space, member, member, fact_id=fact_id, placeholder="[gone]", neutral="Chat"
        )
        return forgot.facts

    mine = await repo.add(A, X, "a", source="tool", cap=5)
    theirs = await repo.add(A, Y, "b", source="tool", cap=5)
    assert mine is not None and theirs is not None
    assert not await forget(A, X, theirs.id), "another member's fact"
    assert not await forget(B, X, mine.id), "another space"
    assert not await repo.set_shared(A, Y, mine.id, True)
    assert await forget(A, X, mine.id) == 1
    await repo.add(A, X, "c", source="tool", cap=5)
    await repo.add(A, X, "d", source="tool", cap=5)
    assert await forget(A, X, None) == 2
    assert [f.fact for f in await repo.of_member(A, Y)] == ["b"]


async def test_switch_is_per_space_and_member(db: Database) -> None:
    repo = MemberFactRepository(db)
    assert await repo.enabled(A, X)
    await repo.set_enabled(A, X, False)
    assert not await repo.enabled(A, X)
    assert await repo.enabled(B, X) and await repo.enabled(A, Y)
    await repo.set_enabled(A, X, True)
    assert await repo.enabled(A, X)
    await repo.add(A, Y, "b", source="tool", member_name="yui", cap=5)
    await repo.set_enabled(A, Y, False)
    summary = {m.member_id: m for m in await repo.members(A)}
    assert summary[X].facts == 0 and summary[X].enabled
    assert summary[Y].facts == 1 and not summary[Y].enabled and summary[Y].member_name == "yui"
    assert await repo.members(B) == []


async def test_a_fact_keeps_its_session_until_the_session_goes(db: Database) -> None:
    sessions, repo = SessionRepository(db), MemberFactRepository(db)
    session = await sessions.create(A, title="t")
    fact = await repo.add(A, X, "a", source="tool", session_id=session.id, cap=5)
    foreign = await repo.add(B, X, "b", source="tool", session_id=session.id, cap=5)
    assert fact is not None and fact.session_id == session.id
    assert foreign is not None and foreign.session_id is None, "a session of another space"


async def test_messages_carry_the_recall_hidden_flag(db: Database) -> None:
    sessions, messages = SessionRepository(db), MessageRepository(db)
    session = await sessions.create(A, title="t")
    shown = await messages.add(A, session.id, "user", "hello", author_id=X)
    hidden = await messages.add(A, session.id, "user", "secret", author_id=X, recall_hidden=True)
    assert not await messages.is_recall_hidden(A, shown.id)
    assert await messages.is_recall_hidden(A, hidden.id)
    assert not await messages.is_recall_hidden(B, hidden.id)
    assert [m.content for m in await messages.recent_live(A, session.id, 10)] == [
        "hello",
        "secret",
    ], "kept in the thread as before"
