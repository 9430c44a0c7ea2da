"""Recall over a space's past conversations, on SQLite (FTS5 trigram) and PostgreSQL (pg_trgm)."""

from __future__ import annotations

from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.reads.recall import RecallRepository
from bot.store.reads.recall_hits import Exclude, RecallHit
from bot.store.transfer import SessionExport, SessionTransfer

A = "guild:111"
B = "guild:222"
DM = "dm:333"


def at(minute: int) -> str:
    return f"2026-03-01T10:{minute:02d}:00.000000+00:00"


async def session(repos: Repositories, space: str, title: str, **kw: object) -> str:
    created = await repos.sessions.create(space, title=title, **kw)  # type: ignore[arg-type]
    return created.id


async def say(
    repos: Repositories,
    space: str,
    session_id: str,
    text: str,
    minute: int = 0,
    *,
    role: str = "user",
    author: str | None = "Alice",
    discord_id: int | None = None,
) -> int:
    message = await repos.messages.add(
        space,
        session_id,
        role,
        text,
        author_name=author if role == "user" else None,
        discord_message_id=discord_id,
        created_at=at(minute),
    )
    return message.id


def contents(hits: list[RecallHit]) -> list[str]:
    return [hit.content for hit in hits]


def matching(hits: list[RecallHit]) -> list[RecallHit]:
    """The hits holding a query term (a strong hit's neighbours join the ranking too)."""
    return [hit for hit in hits if hit.matched]


async def test_more_matched_terms_rank_first_and_ties_go_to_the_newest(db: Database) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "pets")
    await say(repos, A, s, "The weather in Sapporo is cold", 1)
    await say(repos, A, s, "My cat sleeps all day", 2)
    await say(repos, A, s, "I am moving to Sapporo with my cat", 3)
    older = await say(repos, A, s, "Sapporo snow festival", 4)
    newer = await say(repos, A, s, "Sapporo snow festival", 5)
    result = await repos.recall.lexical(A, "cat Sapporo snow", limit=10)
    assert [t for t in result.terms.all] == ["cat", "Sapporo", "snow"]
    ranked = contents(result.hits)
    # Two terms each: the festival twice (identical texts: the newer first), the move.
    assert ranked[:2] == ["Sapporo snow festival"] * 2
    assert [hit.id for hit in result.hits[:2]] == [newer, older]
    assert ranked[2] == "I am moving to Sapporo with my cat"
    assert set(ranked[3:]) == {"The weather in Sapporo is cold", "My cat sleeps all day"}
    assert [len(hit.matched) for hit in result.hits] == [2, 2, 2, 1, 1]


async def test_other_spaces_are_never_returned(db: Database) -> None:
    repos = Repositories.over(db)
    a = await session(repos, A, "a")
    b = await session(repos, B, "b")
    dm = await session(repos, DM, "dm")
    await say(repos, A, a, "My cat is called Mochi-Kinako")
    await say(repos, B, b, "My cat is called Tama")
    await say(repos, DM, dm, "猫の名前はタマ")
    for query in ("cat called", "Mochi-Kinako", "猫", "タマ"):
        for space, other in ((A, ("Tama", "タマ")), (B, ("Mochi",)), (DM, ("Mochi", "cat"))):
            found = "\n".join(contents((await repos.recall.recall(space, query)).hits))
            assert not any(word in found for word in other), (space, query, found)
    assert contents((await repos.recall.recall(B, "cat")).hits) == ["My cat is called Tama"]


async def test_archived_messages_summaries_and_imported_sessions_are_searched(
    db: Database,
) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "moving")
    first = await say(repos, A, s, "I am moving to Sapporo in March", 1)
    await say(repos, A, s, "Good luck with the move", 2, role="assistant")
    await repos.memories.summarize_messages(A, s, [first], "Alice moves to Sapporo in March.")
    transfer = SessionTransfer(
        db, repos.sessions, repos.messages, repos.memories, repos.attachments
    )
    stamp = "2025-01-01T00:00:00+00:00"
    await transfer.import_session(
        A,
        SessionExport.model_validate(
            {
                "exported_at": stamp,
                "session": {"id": "old-trip", "title": "Old trip", "created_at": stamp,
                            "updated_at": stamp},
                "messages": [{"id": 1, "role": "user", "content": "Sapporo ramen was great",
                              "author_name": "Bob", "created_at": stamp}],
            }
        ),
    )  # fmt: skip
    hits = (await repos.recall.recall(A, "Sapporo")).hits
    found = {(hit.kind, hit.content, hit.session_title) for hit in hits}
    assert ("message", "I am moving to Sapporo in March", "moving") in found  # archived
    assert ("summary", "Alice moves to Sapporo in March.", "moving") in found
    assert ("message", "Sapporo ramen was great", "Old trip") in found  # imported
    imported = next(hit for hit in hits if hit.session_title == "Old trip")
    assert (imported.author_name, imported.created_at) == ("Bob", stamp)


async def test_hits_carry_neighbours_and_where_they_were_said(db: Database) -> None:
    repos = Repositories.over(db)
    thread = await session(
        repos, A, "Cats", source="discord", discord_guild_id=111, discord_channel_id=555
    )
    for minute, text in enumerate(["one", "two", "three", "four"]):
        await say(repos, A, thread, f"line {text}", minute)
    hit_id = await say(repos, A, thread, "My cat is called Mochi-Kinako", 10, discord_id=777)
    await say(repos, A, thread, "What a lovely name!", 11, role="assistant")
    await say(repos, A, thread, "thanks", 12)
    await say(repos, A, thread, "line five", 13)
    dm = await session(repos, DM, "dm", source="discord", discord_channel_id=888)
    dm_hit = await say(repos, DM, dm, "My cat Tama", 1, discord_id=999)

    (hit,) = matching((await repos.recall.recall(A, "Mochi-Kinako")).hits)
    assert hit.id == hit_id and hit.author_name == "Alice" and hit.role == "user"
    assert [line.content for line in hit.before] == ["line three", "line four"]
    assert [line.content for line in hit.after] == ["What a lovely name!", "thanks"]
    assert hit.after[0].role == "assistant" and hit.after[0].author_name is None
    assert hit.jump_url == "https://discord.com/channels/111/555/777"
    (dm_found,) = matching((await repos.recall.recall(DM, "Tama")).hits)
    assert dm_found.id == dm_hit
    assert dm_found.jump_url == "https://discord.com/channels/@me/888/999"
    no_context = await repos.recall.recall(A, "Mochi-Kinako", context_lines=0)
    assert no_context.hits[0].before == () and no_context.hits[0].after == ()


async def test_exclude_leaves_a_threads_own_messages_out(db: Database) -> None:
    repos = Repositories.over(db)
    here = await session(repos, A, "here")
    there = await session(repos, A, "there")
    await say(repos, A, here, "what is my cat called?")
    await say(repos, A, there, "My cat is called Mochi-Kinako")
    await repos.memories.summarize_messages(
        A, here, [await say(repos, A, here, "cat chat")], "A chat about a cat."
    )
    everything = await repos.recall.recall(A, "cat 猫")
    assert {hit.session_id for hit in everything.hits} == {here, there}
    others = await repos.recall.recall(A, "cat 猫", exclude=Exclude(here))
    assert contents(others.hits) == ["My cat is called Mochi-Kinako"]


async def test_exclude_leaves_out_the_sessions_a_reset_closed_in_that_thread(
    db: Database,
) -> None:
    repos = Repositories.over(db)
    thread = {"source": "discord", "discord_guild_id": 111, "discord_channel_id": 555}
    before_reset = await session(repos, A, "t", **thread)
    after_reset = await session(repos, A, "t", **thread)
    other_thread = await session(
        repos, A, "u", source="discord", discord_guild_id=111, discord_channel_id=666
    )
    terminal = await session(repos, A, "local")
    await say(repos, A, before_reset, "first question about cats")
    await say(repos, A, after_reset, "second question about cats")
    await say(repos, A, other_thread, "a question about cats elsewhere")
    await say(repos, A, terminal, "猫 question in the terminal")
    found = await repos.recall.recall(A, "question 猫", exclude=Exclude(after_reset, 555))
    assert {hit.session_id for hit in found.hits} == {other_thread, terminal}
    found = await repos.recall.recall(A, "question 猫", exclude=Exclude(terminal))
    assert {hit.session_id for hit in found.hits} == {before_reset, after_reset, other_thread}


async def test_japanese_two_character_terms_match(db: Database) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "旅行")
    await say(repos, A, s, "来月東京タワーに行きます", 1)
    await say(repos, A, s, "大阪のたこ焼きが好き", 2)
    await say(repos, A, s, "うちの猫はよく寝る", 3)
    result = await repos.recall.recall(A, "東京")
    assert contents(matching(result.hits)) == ["来月東京タワーに行きます"]
    # Particles and endings are dropped; the kanji and katakana words are the terms.
    result = await repos.recall.recall(A, "私の猫の名前は何ですか")
    assert result.terms.all == ("猫", "名前")
    assert contents(matching(result.hits)) == ["うちの猫はよく寝る"]
    mixed = await repos.recall.recall(A, "東京タワー たこ焼き")
    assert contents(mixed.hits)[:2] == ["来月東京タワーに行きます", "大阪のたこ焼きが好き"]


async def test_queries_without_terms_or_with_fts_syntax_find_nothing_or_text(
    db: Database,
) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "syntax")
    await say(repos, A, s, 'he said "NEAR(cat dog)" and AND * OR')
    assert (await repos.recall.recall(A, "what is the")).hits == []
    assert (await repos.recall.recall(A, "   ")).hits == []
    found = await repos.recall.recall(A, 'NEAR(cat "dog)"')
    assert contents(found.hits) == ['he said "NEAR(cat dog)" and AND * OR']


async def test_the_repository_is_built_by_the_store_face(db: Database) -> None:
    assert isinstance(Repositories.over(db).recall, RecallRepository)


async def test_messages_of_a_member_with_memory_off_are_never_recalled(db: Database) -> None:
    repos = Repositories.over(db)
    s = await session(repos, A, "pets")
    before = await say(repos, A, s, "Our hamster is called Kinako", 1)
    hidden = await repos.messages.add(
        A, s, "user", "My hamster Mochi hides seeds 東京", created_at=at(2), recall_hidden=True
    )
    await say(repos, A, s, "hamster wheels are loud", 3)
    # Long terms (the full-text index) and short ones (the recent window) alike.
    for query in ("hamster", "Mochi", "東京"):
        result = await repos.recall.recall(A, query)
        assert hidden.id not in [hit.id for hit in result.hits], query
    found = await repos.recall.recall(A, "Kinako")
    assert [hit.id for hit in matching(found.hits)] == [before]
    # Nor as a neighbouring line of another hit, nor as a neighbour lifted by one.
    assert hidden.id not in [hit.id for hit in found.hits]
    (shown,) = await repos.recall.with_context(A, matching(found.hits))
    assert [line.content for line in shown.after] == ["hamster wheels are loud"]


async def test_the_answer_after_a_strong_hit_joins_the_ranking_from_its_session_only(
    db: Database,
) -> None:
    repos = Repositories.over(db)
    chat = await session(repos, A, "pets")
    other = await session(repos, A, "weather")
    question = await say(repos, A, chat, "Did you finally adopt a dog?", 1, author="Bob")
    between = await say(repos, A, other, "Rainy all week here", 2, author="Dan")
    await say(repos, B, await session(repos, B, "b"), "Another space's line", 3)
    answer = await say(repos, A, chat, "Yes! His name is Biscuit", 4, author="Carla")
    weak = await session(repos, A, "walks")
    for minute in range(5, 17):
        await say(repos, A, weak, f"walked the dog at {minute}", minute, author="Dan")
    hits = (await repos.recall.recall(A, "adopt dog", limit=10)).hits
    ids = [hit.id for hit in hits]
    # Twelve other messages hold a query term; the answer holds none, yet it is in the top
    # ten, below the question that lifted it.
    assert ids[0] == question and answer in ids
    (lifted,) = [hit for hit in hits if hit.id == answer]
    assert lifted.matched == () and lifted.author_name == "Carla"
    # Marked as such: the recall tool shows it as context, not as a match of its own.
    assert [hit.id for hit in hits if hit.lifted] == [answer]
    # The neighbour is the session's, never another session's or another space's row.
    assert between not in ids and all(hit.session_id != other for hit in hits)
    assert {hit.session_id for hit in hits} <= {chat, weak}


async def test_a_threads_opening_message_links_to_the_parent_channel(db: Database) -> None:
    repos = Repositories.over(db)
    # The bot opens a thread on the member's message: the thread gets that message's id.
    thread = await session(
        repos,
        A,
        "Trip",
        source="discord",
        discord_guild_id=111,
        discord_channel_id=555,
        parent_channel_id=444,
    )
    await say(repos, A, thread, "planning the Hokkaido trip", 1, discord_id=555)
    await say(repos, A, thread, "Hokkaido in February then", 2, discord_id=777)
    hits = matching((await repos.recall.recall(A, "Hokkaido")).hits)
    links = {hit.content: hit.jump_url for hit in hits}
    assert links == {
        "planning the Hokkaido trip": "https://discord.com/channels/111/444/555",
        "Hokkaido in February then": "https://discord.com/channels/111/555/777",
    }
