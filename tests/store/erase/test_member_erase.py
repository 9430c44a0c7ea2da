"""Erase me, on both engines: the member's facts, tags, message texts (and the bot's answers to
them), summaries and the titles their messages gave go, in their space only; everyone else's
rows stay as they were."""

from __future__ import annotations

import json
from dataclasses import dataclass

from bot.memory.member_memory import ERASED_PLACEHOLDER, LOCAL_MEMBER, ErasedMember, MemberMemory
from bot.prompts import prompts_for
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.erase.operations import MemberErasure
from bot.store.repos.message_embeddings import StoredVector
from bot.store.repos.recall_terms import IndexedWords
from bot.store.schema.tables import TABLES

A, B = "guild:1", "guild:2"
X, Y = "111", "222"
SECRET = "Mochi-Kinako"  # said by X; the FTS trigram index needs 3+ characters
KEPT = "Hokkaido-Ramen"  # said by Y


@dataclass
class World:
    repos: Repositories
    members: MemberMemory
    told: list[tuple[str, tuple[str, ...]]]


async def _world(db: Database) -> World:
    repos = Repositories.over(db)
    members = MemberMemory(repos.member_facts, MemberErasure(db))
    told: list[tuple[str, tuple[str, ...]]] = []

    async def listener(space: str, erased: ErasedMember) -> None:
        if erased.sessions:
            told.append((space, erased.sessions))

    members.add_erase_listener(listener)
    return World(repos, members, told)


async def _say(w: World, space: str, session: str, author: str, text: str) -> tuple[int, int]:
    """`author` says `text`; the bot answers by repeating it. The two ids."""
    asked = await w.repos.messages.add(
        space, session, "user", text, author_id=author, author_name=f"user{author}"
    )
    answer = await w.repos.messages.add(
        space, session, "assistant", f"Noted: {text}", reply_to=asked.id
    )
    return asked.id, answer.id


async def _contents(db: Database, space: str) -> list[str]:
    rows = await db.fetchall(
        "SELECT content FROM messages WHERE space_id = ? ORDER BY id", (space,)
    )
    return [str(row["content"]) for row in rows]


async def _fts(db: Database, phrase: str) -> set[int]:
    """Message ids the SQLite full-text index finds `phrase` in (every space)."""
    rows = await db.fetchall(
        "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (json.dumps(phrase),)
    )
    return {int(row[0]) for row in rows}


async def test_erase_takes_the_members_texts_facts_and_tags_in_their_space_only(
    db: Database,
) -> None:
    w = await _world(db)
    mine = await w.repos.sessions.create(A, title=f"my cat is {SECRET}")
    theirs = await w.repos.sessions.create(A, title="Ramen talk")
    elsewhere = await w.repos.sessions.create(B, title=f"my cat is {SECRET}")
    x1, x1_answer = await _say(w, A, mine.id, X, f"my cat is {SECRET}")
    y1, y1_answer = await _say(w, A, mine.id, Y, f"I like {KEPT}")
    y2, _ = await _say(w, A, theirs.id, Y, f"{KEPT} again")
    x2, _ = await _say(w, A, theirs.id, X, f"{SECRET} sleeps a lot")
    bx, bx_answer = await _say(w, B, elsewhere.id, X, f"my cat is {SECRET}")
    for message_id in (x1, x1_answer, y1, x2, bx):
        await w.repos.tags.add_message_tags(A if message_id != bx else B, message_id, ["cat"])
    await w.repos.tool_calls.add(
        A,
        mine.id,
        message_id=x1,
        call_id="c1",
        tool="remember",
        arguments={"fact": SECRET},
        ok=True,
    )
    await w.members.remember(A, X, f"my cat is {SECRET}", "request")
    await w.members.remember(A, Y, f"likes {KEPT}", "tool", shared=True)
    await w.members.remember(B, X, f"my cat is {SECRET}", "request")
    await w.members.set_enabled(A, X, False)

    erased = await w.members.erase(A, X)

    assert (erased.facts, erased.messages) == (1, 4), "X's two messages and the answers to them"
    assert erased.tags == 3 and erased.summaries == 0 and erased.sessions == ()
    texts = await _contents(db, A)
    assert not [t for t in texts if SECRET in t]
    assert texts.count(ERASED_PLACEHOLDER) == 4
    assert f"I like {KEPT}" in texts and f"Noted: I like {KEPT}" in texts
    assert f"my cat is {SECRET}" in await _contents(db, B), "another space is untouched"
    for message_id in (x1, x1_answer, x2):
        stored = await w.repos.messages.get(A, message_id)
        assert stored is not None and stored.content == ERASED_PLACEHOLDER
        assert await w.repos.messages.is_recall_hidden(A, message_id)
        assert await w.repos.tags.tags_for_message(A, message_id) == []
    assert not await w.repos.messages.is_recall_hidden(A, y1)
    assert await w.repos.tags.tags_for_message(A, y1) == ["cat"]
    assert await w.repos.tags.tags_for_message(B, bx) == ["cat"]
    assert not await w.repos.messages.is_recall_hidden(A, y1_answer)

    assert await w.members.list(A, X) == [] and await w.members.enabled(A, X)
    assert [f.fact for f in await w.members.list(A, Y)] == [f"likes {KEPT}"]
    assert [f.fact for f in await w.members.list(B, X)] == [f"my cat is {SECRET}"]
    [call] = await w.repos.tool_calls.for_session(A, mine.id)
    assert SECRET not in json.dumps(call.__dict__, default=str)

    opened = await w.repos.sessions.get(A, mine.id)
    assert opened is not None and opened.title == ERASED_PLACEHOLDER, "X opened it"
    kept = await w.repos.sessions.get(A, theirs.id)
    assert kept is not None and kept.title == "Ramen talk", "Y opened it"
    other = await w.repos.sessions.get(B, elsewhere.id)
    assert other is not None and SECRET in other.title

    recalled = await w.repos.recall.recall(A, SECRET)
    assert recalled.hits == [] or all(SECRET not in h.content for h in recalled.hits)
    assert not [h for h in recalled.hits if SECRET in h.session_title]
    assert [h.content for h in (await w.repos.recall.recall(A, KEPT)).hits]
    assert [h.id for h in (await w.repos.recall.recall(B, SECRET)).hits] == [bx, bx_answer]
    assert y2 > 0

    if db.dialect == "sqlite":
        assert await _fts(db, SECRET) == {bx, bx_answer}, "only the other space's are indexed"
        assert {x1, x1_answer, x2} <= await _fts(db, "erased at the member")
    else:
        rows = await db.fetchall(
            "SELECT id FROM messages WHERE content ILIKE ?", (f"%{SECRET.lower()}%",)
        )
        assert {int(row["id"]) for row in rows} == {bx, bx_answer}


async def test_erase_drops_the_summaries_holding_them_and_what_they_were_condensed_into(
    db: Database,
) -> None:
    w = await _world(db)
    thread = await w.repos.sessions.create(A, title="club")
    other = await w.repos.sessions.create(A, title="other")
    y0, y0_answer = await _say(w, A, thread.id, Y, f"hello {KEPT}")
    y_only = list(await _say(w, A, thread.id, Y, f"{KEPT} is best"))
    with_x = list(await _say(w, A, thread.id, X, f"my cat is {SECRET}"))
    untouched = list(await _say(w, A, other.id, Y, "weather"))
    memories = w.repos.memories
    first = await memories.summarize_messages(A, thread.id, [y0, y0_answer, *y_only], "Y ramen")
    holding = await memories.summarize_messages(A, thread.id, with_x, f"X's cat is {SECRET}")
    separate = await memories.summarize_messages(A, other.id, untouched, "weather chat")
    assert first and holding and separate
    await db.execute(
        "UPDATE memories SET embedding_json = '[0.5]' WHERE space_id = ? AND id = ?",
        (A, holding.id),
    )
    await w.repos.tags.add_memory_tags(A, holding.id, ["cat"])
    condensed = await memories.condense(
        A, thread.id, [first.id, holding.id], f"Y likes ramen; X's cat {SECRET}", 1
    )
    assert condensed is not None

    erased = await w.members.erase(A, X)

    assert erased.summaries == 2 and erased.sessions == (thread.id,)
    assert w.told == [(A, (thread.id,))], "the listener rebuilds that thread's summaries"
    live = await memories.live(A, thread.id)
    assert [m.id for m in live] == [first.id], "what the condensed summary held is live again"
    assert not [m for m in await memories.all_for_session(A, thread.id) if SECRET in m.summary]
    assert [m.id for m in await memories.live(A, other.id)] == [separate.id]
    assert await db.scalar(
        "SELECT COUNT(*) FROM memories WHERE space_id = ? AND embedding_json IS NOT NULL", (A,)
    ) in (0, "0")
    assert await w.repos.tags.tags_for_memory(A, holding.id) == []
    back = [await w.repos.messages.get(A, i) for i in with_x]
    assert all(m is not None and m.archived_at is None and m.memory_id is None for m in back)
    assert all(m is not None and m.content == ERASED_PLACEHOLDER for m in back)
    y_kept = await w.repos.messages.get(A, y_only[0])
    assert y_kept is not None and y_kept.memory_id == first.id and y_kept.archived_at
    assert await w.repos.messages.count_live(A, thread.id) == 2


async def test_the_local_user_is_erased_by_their_unauthored_messages(db: Database) -> None:
    w = await _world(db)
    local = "local:me"
    session = await w.repos.sessions.create(local, title=SECRET)
    said = await w.repos.messages.add(local, session.id, "user", f"my cat is {SECRET}")
    await w.repos.messages.add(local, session.id, "assistant", SECRET, reply_to=said.id)
    await w.members.remember(local, LOCAL_MEMBER, f"cat {SECRET}", "request")
    erased = await w.members.erase(local, LOCAL_MEMBER)
    assert (erased.facts, erased.messages) == (1, 2)
    assert not [t for t in await _contents(db, local) if SECRET in t]


async def test_erase_takes_their_words_out_of_recalls_term_index(db: Database) -> None:
    w = await _world(db)
    session = (await w.repos.sessions.create(A, title="pets")).id
    asked, answer = await _say(w, A, session, X, f"my cat is {SECRET}")
    kept, _ = await _say(w, A, session, Y, f"I had {KEPT} today")
    pending = await w.repos.recall_terms.unindexed_all_spaces(10)
    words = [IndexedWords(row.space_id, row.id, row.content.lower()) for row in pending]
    await w.repos.recall_terms.store(pending, words)

    async def indexed() -> set[int]:
        rows = await db.fetchall("SELECT id FROM recall_terms WHERE space_id = ?", (A,))
        return {int(row["id"]) for row in rows}

    assert {asked, answer, kept} <= await indexed()
    await w.members.erase(A, X)
    left = await indexed()
    assert asked not in left and answer not in left and kept in left
    rows = await db.fetchall("SELECT terms FROM recall_terms WHERE space_id = ?", (A,))
    assert all(SECRET.lower() not in str(row["terms"]) for row in rows)
    # Erased messages stay out: hidden, the indexer never writes them again.
    assert {row.id for row in await w.repos.recall_terms.unindexed_all_spaces(10)} == set()


async def _left_anywhere(db: Database, needle: str, spared: str) -> list[str]:
    """`table.column` of every row (outside the space `spared`) still holding `needle`, in
    any table of the schema, text or bytes."""
    folded = needle.casefold()
    found = []
    for table in TABLES:
        for row in await db.fetchall(f"SELECT * FROM {table.name}"):
            columns = row.keys()
            if "space_id" in columns and row["space_id"] == spared:
                continue
            for column in columns:
                value = row[column]
                if isinstance(value, (bytes, bytearray, memoryview)):
                    value = bytes(value).decode("utf-8", "replace")
                if isinstance(value, str) and folded in value.casefold():
                    found.append(f"{table.name}.{column}")
    return found


def _attached(ref_id: str, name: str, text: str) -> str:
    """A message's text with a file attached, as the attachment intake writes it."""
    prompts = prompts_for("en")
    reference = prompts.format(
        "attachment_reference", id=ref_id, name=name, type="text/plain", size="1 KB", hint=""
    )
    return prompts.format("attachment_inline", reference=reference, name=name, text=text)


async def _log(w: World, session: str | None, request: str, response: str) -> int:
    return await w.repos.api_logs.add(
        session_id=session,
        model="test-model",
        purpose="chat" if session else "recall-embed",
        request_json=json.dumps({"messages": [{"role": "user", "content": request}]}),
        response_text=response,
        error=None,
        latency_ms=5,
    )


async def test_nothing_of_the_erased_text_is_left_anywhere_in_the_database(
    db: Database,
) -> None:
    w = await _world(db)
    thread = (await w.repos.sessions.create(A, title="pets")).id
    elsewhere = (await w.repos.sessions.create(B, title="pets")).id
    before = await _log(w, thread, f"I like {KEPT}", "Nice.")  # a call before X spoke
    said = f"my cat {SECRET} loves Sapporo-Kita"
    pdf = await w.repos.attachments.add(A, thread, "cat.pdf", "application/pdf", said.encode())
    text_file = await w.repos.attachments.add(A, thread, "cat.txt", "text/plain", said.encode())
    asked = await w.repos.messages.add(
        A, thread, "user", f"{said} [attachment:{pdf.id} cat.pdf]\n\n"
        + _attached(text_file.id, "cat.txt", said), author_id=X, author_name="userX",
    )  # fmt: skip
    answer = await w.repos.messages.add(A, thread, "assistant", f"So {SECRET}!", reply_to=asked.id)
    kept_file = await w.repos.attachments.add(A, thread, "ramen.txt", "text/plain", KEPT.encode())
    y_said, _ = await _say(w, A, thread, Y, f"I like {KEPT} [attachment:{kept_file.id} r.txt]")
    await _say(w, B, elsewhere, X, f"my cat is {SECRET}")
    await w.repos.tags.add_message_tags(A, asked.id, [SECRET.lower()])
    pending = await w.repos.recall_terms.unindexed_all_spaces(10)
    words = [IndexedWords(row.space_id, row.id, row.content.lower()) for row in pending]
    await w.repos.recall_terms.store(pending, words)
    await w.repos.tool_calls.add(
        A, thread, message_id=asked.id, call_id="c", tool="recall",
        arguments={"query": SECRET}, ok=True,
    )  # fmt: skip
    summary = await w.repos.memories.summarize_messages(
        A, thread, [asked.id, answer.id], f"X's cat is {SECRET}"
    )
    assert summary is not None
    await w.members.remember(A, X, f"my cat is {SECRET}", "request")
    for space in (A, B):
        await w.repos.word_pool.add(space, 7, [SECRET, "Sapporo", KEPT], keep=200)
    await w.repos.topics.add_post(
        A, 7, kind="idle", topic=SECRET, words=[SECRET, "Sapporo"],
        content=f"Anyone else have a cat like {SECRET}?", discord_message_id=None,
        posted_at="2026-12-07T00:00:00",
    )  # fmt: skip
    await w.repos.topics.add_post(
        A, 7, kind="idle", topic=KEPT, words=[KEPT], content=f"{KEPT} tonight?",
        discord_message_id=None, posted_at="2026-12-07T00:00:01",
    )  # fmt: skip
    in_thread = await _log(w, thread, f"userX: {said}", f"So {SECRET}!")
    spaceless = await _log(w, None, said[:200], "1 vectors of 8")
    in_b = await _log(w, elsewhere, f"my cat is {SECRET}", "Nice cat.")
    everywhere = {
        "messages.content", "attachments.data", "word_pool.word", "topic_posts.topic",
        "api_logs.request_json", "api_logs.response_text", "memories.summary",
        "recall_terms.terms", "member_facts.fact", "message_tags.tag", "tool_calls.arguments_json",
    }  # fmt: skip
    assert everywhere <= set(await _left_anywhere(db, SECRET, B))

    erased = await w.members.erase(A, X)

    assert await _left_anywhere(db, SECRET, B) == []
    assert await _left_anywhere(db, "Sapporo", B) == []
    if db.dialect == "sqlite":
        assert await _fts(db, SECRET) == await _fts(db, f"my cat is {SECRET}"), "B's only"
    assert erased.attachments == tuple(sorted([(thread, pdf.id), (thread, text_file.id)]))
    assert erased.logs == 2, "the thread's call and the embedding batch after X spoke"
    assert [a.id for a in await w.repos.attachments.list_for_session(A, thread)] == [
        kept_file.id
    ], "Y's file stays"
    assert [p.word for p in await w.repos.word_pool.words(A, 7)] == [KEPT]
    assert {p.word for p in await w.repos.word_pool.words(B, 7)} == {SECRET, "Sapporo", KEPT}
    posts = await w.repos.topics.recent_posts(A, 7)
    assert sorted(p.topic for p in posts) == sorted([ERASED_PLACEHOLDER, KEPT])
    logs = {i: await w.repos.api_logs.get(i) for i in (before, in_thread, spaceless, in_b)}
    for blanked in (in_thread, spaceless):
        row = logs[blanked]
        assert row is not None and ERASED_PLACEHOLDER in row.request_json
        assert row.response_text in (None, ERASED_PLACEHOLDER) and row.latency_ms == 5
    kept_log, b_log = logs[before], logs[in_b]
    assert kept_log is not None and KEPT in kept_log.request_json, "older calls stay"
    assert b_log is not None and SECRET in b_log.request_json, "another space's calls stay"
    kept_message = await w.repos.messages.get(A, y_said)
    assert kept_message is not None and KEPT in kept_message.content


async def test_erase_takes_the_pool_words_they_brought_and_only_theirs(db: Database) -> None:
    w = await _world(db)
    pool = w.repos.word_pool

    async def authors(space: str) -> set[tuple[str, str]]:
        rows = await db.fetchall(
            "SELECT word, author_id FROM word_pool_authors WHERE space_id = ?", (space,)
        )
        return {(str(row["word"]), str(row["author_id"])) for row in rows}

    # Words from channel messages: no stored message holds them, only who brought them.
    await pool.add(A, 7, ["Otaru", "tea"], keep=3, authored=[("Otaru", X), ("tea", X)])
    await pool.add(A, 8, ["Otaru"], keep=3, authored=[("Otaru", X)])
    await pool.add(A, 7, ["tea", "Kyoto"], keep=3, authored=[("tea", Y), ("Kyoto", Y)])
    await pool.add(B, 7, ["Otaru"], keep=3, authored=[("Otaru", X)])
    await pool.add(A, 9, ["gone"], keep=3, at="2026-01-01T00:00:00", authored=[("gone", X)])
    await pool.add(A, 9, ["late", "later", "last"], keep=3, at="2026-01-02T00:00:00")
    assert ("gone", X) not in await authors(A), "who brought a word leaves with the word"

    await w.members.erase(A, X)

    assert [p.word for p in await pool.words(A, 7)] == ["Kyoto"], "tea: X said it too"
    assert await pool.words(A, 8) == []
    assert {p.word for p in await pool.words(B, 7)} == {"Otaru"}
    assert await authors(A) == {("Kyoto", Y)} and await authors(B) == {("Otaru", X)}


async def test_an_index_or_embedding_read_before_the_erase_writes_nothing_of_it(
    db: Database,
) -> None:
    w = await _world(db)
    session = (await w.repos.sessions.create(A, title="pets")).id
    asked, answer = await _say(w, A, session, X, f"my cat is {SECRET}")
    kept, _ = await _say(w, A, session, Y, f"I had {KEPT} today")
    # The background indexer and embedder read the texts; the erase runs; they write.
    pending = await w.repos.recall_terms.unindexed_all_spaces(10)
    unembedded = await w.repos.message_embeddings.unembedded_all_spaces("e", 10)
    await w.members.erase(A, X)
    words = [IndexedWords(row.space_id, row.id, row.content.lower()) for row in pending]
    await w.repos.recall_terms.store(pending, words)
    await w.repos.message_embeddings.store(
        "e", [StoredVector(row.space_id, row.id, [1.0, 0.0]) for row in unembedded]
    )

    rows = await db.fetchall("SELECT id, terms FROM recall_terms WHERE space_id = ?", (A,))
    assert not [row for row in rows if SECRET.lower() in str(row["terms"])]
    assert kept in {int(row["id"]) for row in rows}
    vectors = await db.fetchall(
        "SELECT message_id FROM message_embeddings WHERE space_id = ?", (A,)
    )
    assert {int(row["message_id"]) for row in vectors} == {
        row.id for row in unembedded if row.id not in (asked, answer)
    }
    assert {asked, answer} <= {row.id for row in unembedded}
