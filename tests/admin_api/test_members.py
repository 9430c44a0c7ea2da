"""Member memory routes over a real socket: members and facts per space, deleting facts and
erasing a member, each only in the space it names."""

from __future__ import annotations

from tests.admin_api.conftest import Admin

A, B = "guild:1", "guild:2"
X, Y = "111", "222"
SECRET = "Mochi-Kinako"


async def test_members_and_their_facts_per_space(admin: Admin) -> None:
    members = admin.services.members
    cat = await members.remember(A, X, f"my cat is {SECRET}", "request", member_name="alice")
    await members.remember(A, X, "likes tea", "tool", member_name="alice")
    await members.remember(A, Y, "likes ramen", "tool", member_name="bob")
    await members.remember(B, X, "lives in Osaka", "tool", member_name="alice")
    await members.set_enabled(A, Y, False)

    listed = await admin.get(f"/api/memory/members/{A}")
    assert listed.status == 200
    assert [
        (m["member_id"], m["member_name"], m["facts"], m["enabled"]) for m in listed.json["members"]
    ] == [(X, "alice", 2, True), (Y, "bob", 1, False)]
    facts = await admin.get(f"/api/memory/members/{A}/{X}")
    assert [f["fact"] for f in facts.json["facts"]] == [f"my cat is {SECRET}", "likes tea"]
    assert facts.json["facts"][0]["id"] == cat.id and facts.json["facts"][0]["source"] == "request"
    assert (await admin.get(f"/api/memory/members/{B}/{Y}")).json == {"facts": []}

    assert (await admin.delete(f"/api/memory/members/{B}/{X}/facts/{cat.id}")).status == 404
    assert (await admin.delete(f"/api/memory/members/{A}/{Y}/facts/{cat.id}")).status == 404
    gone = await admin.delete(f"/api/memory/members/{A}/{X}/facts/{cat.id}")
    assert gone.json == {"deleted": 1}
    assert [f.fact for f in await members.list(A, X)] == ["likes tea"]

    assert (await admin.delete(f"/api/memory/members/{A}/{X}/facts")).json == {"deleted": 1}
    assert await members.list(A, X) == []
    assert [f.fact for f in await members.list(B, X)] == ["lives in Osaka"]
    assert [f.fact for f in await members.list(A, Y)] == ["likes ramen"]

    assert (await admin.get("/api/memory/members/nowhere")).status == 422
    assert (await admin.get(f"/api/memory/members/{A}/not-a-member")).status == 422


async def test_erase_a_member_in_one_space(admin: Admin) -> None:
    repos, members = admin.services.repos, admin.services.members
    here = await repos.sessions.create(A, title="club")
    there = await repos.sessions.create(B, title="club")
    said = await repos.messages.add(A, here.id, "user", f"my cat is {SECRET}", author_id=X)
    kept = await repos.messages.add(A, here.id, "user", "ramen", author_id=Y)
    elsewhere = await repos.messages.add(B, there.id, "user", f"cat {SECRET}", author_id=X)
    await members.remember(A, X, f"my cat is {SECRET}", "request")
    logged = {
        space: await repos.api_logs.add(
            session_id=session, model="m", purpose="chat", request_json=f'"{SECRET}"',
            response_text=f"So, {SECRET}.", error=None, latency_ms=3,
        )
        for space, session in ((A, here.id), (B, there.id))
    }  # fmt: skip

    erased = await admin.post(f"/api/memory/members/{A}/{X}/erase")
    assert erased.status == 200
    assert erased.json == {"facts": 1, "messages": 1, "tags": 0, "summaries": 0, "sessions": []}
    stored = await repos.messages.get(A, said.id)
    assert stored is not None and SECRET not in stored.content
    assert await repos.messages.is_recall_hidden(A, said.id)
    other = await repos.messages.get(A, kept.id)
    assert other is not None and other.content == "ramen"
    far = await repos.messages.get(B, elsewhere.id)
    assert far is not None and SECRET in far.content
    assert (await admin.get(f"/api/memory/members/{A}")).json == {"members": []}
    # The Logs page shows the call, its bodies replaced by the placeholder.
    shown = (await admin.get(f"/api/logs/{logged[A]}")).json
    assert shown["request_json"] == shown["response_text"] == stored.content
    assert shown["model"] == "m" and shown["latency_ms"] == 3
    assert SECRET in (await admin.get(f"/api/logs/{logged[B]}")).json["request_json"]


async def test_deleting_a_fact_blanks_the_message_it_was_said_in(admin: Admin) -> None:
    repos, members = admin.services.repos, admin.services.members
    here = await repos.sessions.create(A, title=f"remember that my cat is {SECRET}")
    there = await repos.sessions.create(B, title=f"remember that my cat is {SECRET}")
    said = await repos.messages.add(
        A, here.id, "user", f"remember that my cat is {SECRET}", author_id=X, author_name="alice"
    )
    noted = await repos.messages.add(A, here.id, "assistant", "Noted!", reply_to=said.id)
    other = await repos.messages.add(B, there.id, "user", f"my cat is {SECRET}", author_id=X)
    cat = await members.remember(
        A, X, f"my cat is {SECRET}", "request", session_id=here.id, message_id=said.id
    )

    gone = await admin.delete(f"/api/memory/members/{A}/{X}/facts/{cat.id}")

    assert gone.json == {"deleted": 1}
    forgotten = {m.id: m.content for m in await repos.messages.recent_live(A, here.id, 10)}
    assert set(forgotten.values()) == {"[forgotten at the member's request]"}
    assert set(forgotten) == {said.id, noted.id}
    renamed = await repos.sessions.get(A, here.id)
    assert renamed is not None and renamed.title == "Chat with alice"
    # Another space's message and title are its own.
    assert [m.content for m in await repos.messages.recent_live(B, there.id, 10)] == [other.content]
    kept = await repos.sessions.get(B, there.id)
    assert kept is not None and kept.title == f"remember that my cat is {SECRET}"
