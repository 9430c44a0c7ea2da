"""Spaces at the store level: ids, the spaces table, every repository scoped, purge and move."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

import pytest

from bot.errors import ConflictError, NotFoundError, ValidationError
from bot.store.engine.database import Database
from bot.store.repos.api_logs import ApiLogFilter, ApiLogRepository
from bot.store.repos.attachments import AttachmentRepository
from bot.store.repos.knowledge import KnowledgeRepository, KnowledgeSource
from bot.store.repos.memories import MemoryRepository
from bot.store.repos.messages import MessageRepository
from bot.store.repos.notes import NoteRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.repos.space_records import SpaceRepository
from bot.store.repos.tags import TagRepository
from bot.store.repos.topics import TopicRepository
from bot.store.repos.word_pool import WordPoolRepository
from bot.store.schema.tables import SPACE_TABLES
from bot.store.spaces import (
    ALL_SPACES,
    MAX_DISCORD_ID,
    conversation_space,
    dm_space,
    guild_space,
    in_space,
    local_space,
    parse_space,
    space_dirname,
    space_id_problem,
)

A = "guild:100"
B = "guild:200"


# Refused by parse_space: each would be a second spelling of a space or not fit the store.
ODD_SPACE_IDS = (
    "guild:01",
    "dm:007",
    "guild:0",
    "guild:9223372036854775808",  # 2^63
    "guild:18446744073709551615",  # 2^64 - 1
    "dm:18446744073709551616",  # 2^64
    "guild:-1",
    "guild:+5",
    "",
    "guild:",
    "guild:１２",
    "guild:١٢",
    " guild:12",
    "guild:12 ",
    "guild:12\n",
    "GUILD:12",
    "local:",
    "local:home\n",
    "local:ｈｏｍｅ",
    "local:" + "a" * 65,
)


@pytest.mark.parametrize("bad", ODD_SPACE_IDS)
def test_only_the_one_spelling_of_a_space_id_parses(bad: str) -> None:
    with pytest.raises(ValidationError):
        parse_space(bad)
    assert space_id_problem(bad) is not None


def test_the_largest_discord_id_the_store_holds_is_a_space() -> None:
    top = 2**63 - 1
    assert parse_space(f"guild:{top}").discord_id == top == MAX_DISCORD_ID
    assert guild_space(top) == f"guild:{top}" and dm_space(str(top)) == f"dm:{top}"
    assert parse_space("local:" + "a" * 64).name == "a" * 64
    for bad_id in (0, -1, 2**63, True, "01", "１２", "12\n", " 12"):
        with pytest.raises(ValidationError):
            guild_space(bad_id)  # type: ignore[arg-type]
        with pytest.raises(ValidationError):
            dm_space(bad_id)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        local_space("home\n")


def test_space_ids_parse_and_format() -> None:
    assert guild_space(123) == "guild:123"
    assert dm_space("77") == "dm:77"
    assert local_space() == "local:local" and local_space("home-1") == "local:home-1"
    assert conversation_space(5, 9) == "guild:5" and conversation_space(None, 9) == "dm:9"
    space = parse_space("guild:123")
    assert (space.kind, space.discord_id, space.dirname) == ("guild", 123, "guild_123")
    assert parse_space("dm:9").kind == "dm"
    assert parse_space("local:home").discord_id is None
    assert space_dirname("local:home") == "local_home"
    for bad in ("", "guild:", "guild:x", "dm:-1", "local:a b", "local:../x", "other:1", "guild"):
        with pytest.raises(ValidationError):
            parse_space(bad)
    with pytest.raises(ValidationError):
        local_space("a/b")
    assert in_space(A) == ("space_id = ?", (A,))
    assert in_space(ALL_SPACES) == ("TRUE", ())
    with pytest.raises(TypeError):
        in_space(None)  # type: ignore[arg-type]


async def test_spaces_table_ensure_rename_settings_left(db: Database) -> None:
    spaces = SpaceRepository(db)
    record = await spaces.ensure(A, "Server A")
    assert (record.kind, record.discord_id, record.name) == ("guild", 100, "Server A")
    again = await spaces.ensure(A)
    assert again.name == "Server A", "ensure without a name keeps the old one"
    await spaces.rename(A, "Renamed\nA")
    await spaces.set_default_model(A, "ollama/other")
    await spaces.set_language(A, "en")
    await spaces.set_persona(A, "Be brief.")
    record = await spaces.get(A)
    assert record is not None
    assert (record.name, record.default_model, record.language, record.persona) == (
        "Renamed A",
        "ollama/other",
        "en",
        "Be brief.",
    )
    await spaces.ensure(B)
    await spaces.ensure("local:local")
    assert [r.id for r in await spaces.list()] == ["local:local", A, B]
    assert (await spaces.get(B)) is not None and (await spaces.get(B)).default_model is None  # type: ignore[union-attr]
    await spaces.mark_left(A, "2026-01-01T00:00:00+00:00")
    assert [r.id for r in await spaces.left_before("2026-02-01")] == [A]
    await spaces.mark_returned(A)
    assert await spaces.left_before("2026-02-01") == []
    with pytest.raises(ValidationError):
        await spaces.ensure("nonsense")


@dataclass
class World:
    """Two spaces with one of everything each."""

    db: Database
    sessions: SessionRepository
    messages: MessageRepository
    memories: MemoryRepository
    tags: TagRepository
    notes: NoteRepository
    knowledge: KnowledgeRepository
    attachments: AttachmentRepository
    topics: TopicRepository
    pool: WordPoolRepository
    logs: ApiLogRepository
    ids: dict[str, dict[str, int | str]]


async def fill(db: Database) -> World:
    """Space A and space B, each with a session, messages, a summary, tags, a note page linked
    to the session, a knowledge entry, an attachment, a topic channel and post, pool words and
    an API log row."""
    world = World(
        db,
        SessionRepository(db),
        MessageRepository(db),
        MemoryRepository(db),
        TagRepository(db),
        NoteRepository(db),
        KnowledgeRepository(db),
        AttachmentRepository(db),
        TopicRepository(db),
        WordPoolRepository(db),
        ApiLogRepository(db),
        {},
    )
    extra = {"alpha": ("red", "blue"), "beta": ("green", "yellow")}
    for space, channel, word in ((A, 11, "alpha"), (B, 22, "beta")):
        session = await world.sessions.create(
            space, title=f"t-{space}", discord_channel_id=channel + 1000, parent_channel_id=channel
        )
        question = await world.messages.add(space, session.id, "user", f"{word} question")
        answer = await world.messages.add(
            space, session.id, "assistant", f"{word} answer", reply_to=question.id
        )
        memory = await world.memories.summarize_messages(
            space, session.id, [question.id], f"{word} summary"
        )
        assert memory is not None
        await world.tags.add_message_tags(space, answer.id, [word, extra[word][0]])
        await world.tags.add_memory_tags(space, memory.id, [word, extra[word][1]])
        page = await world.notes.create(space, f"Page {word}", f"{word} body", "sec")
        await world.notes.link(space, session.id, page.id)
        entry = await world.knowledge.add(
            space,
            query=f"{word} query",
            title=f"{word} title",
            summary=f"- {word} fact",
            session_id=session.id,
            md_path=f"web_search/{space_dirname(space)}/{word}.md",
            sources=[KnowledgeSource(word, f"https://{word}.example")],
        )
        attachment = await world.attachments.add(
            space, session.id, f"{word}.txt", "text/plain", b"x"
        )
        await world.topics.upsert(space, channel, {"enabled": True})
        await world.topics.add_post(
            space,
            channel,
            kind="idle",
            topic=word,
            words=[word],
            content=f"{word} opener",
            discord_message_id=channel * 10,
            posted_at="2026-01-01T00:00:00+00:00",
        )
        await world.pool.add(space, channel, [word, word, "shared"], keep=10)
        await world.logs.add(
            session_id=session.id,
            model="m",
            purpose="chat",
            request_json="{}",
            response_text=word,
            error=None,
            latency_ms=1,
        )
        world.ids[space] = {
            "session": session.id,
            "question": question.id,
            "answer": answer.id,
            "memory": memory.id,
            "page": page.id,
            "entry": entry.id,
            "attachment": attachment.id,
            "channel": channel,
        }
    return world


async def test_every_repository_reads_only_its_space(db: Database) -> None:
    w = await fill(db)
    a, b = w.ids[A], w.ids[B]
    sa, sb = str(a["session"]), str(b["session"])

    assert [s.id for s in await w.sessions.list(A)] == [sa]
    assert {s.id for s in await w.sessions.list(ALL_SPACES)} == {sa, sb}
    assert await w.sessions.get(A, sb) is None
    assert (await w.sessions.get(ALL_SPACES, sb)) is not None
    assert await w.sessions.open_for_channel(A, 1022) is None
    assert (await w.sessions.open_for_channel(B, 1022)) is not None

    assert await w.messages.all_for_session(A, sb) == []
    assert await w.messages.recent_live(A, sb, 10) == []
    assert await w.messages.count_live(A, sb) == 0
    assert await w.messages.get(A, int(b["answer"])) is None
    assert [m.content for m in await w.messages.all_for_session(A, sa)] == [
        "alpha question",
        "alpha answer",
    ]

    assert await w.memories.live(A, sb) == []
    assert [m.summary for m in await w.memories.list(A)] == ["alpha summary"]
    assert len(await w.memories.list(ALL_SPACES)) == 2
    assert not await w.memories.delete(A, int(b["memory"]))

    assert await w.tags.tags_for_message(A, int(b["answer"])) == []
    assert set(await w.tags.recent_tags(A, 10)) == {"alpha", "red", "blue"}
    assert await w.tags.related_tags(A, "beta") == []
    assert set(await w.tags.related_tags(A, "alpha")) == {"red", "blue"}
    assert set(await w.tags.related_tags(A, "alpha", channel_id=11)) == {"red", "blue"}
    assert await w.tags.related_tags(A, "alpha", channel_id=22) == []
    assert set(await w.tags.recent_tags(A, 10, channel_id=11)) == {"alpha", "red", "blue"}
    assert await w.tags.recent_tags(A, 10, channel_id=22) == []
    assert not await w.tags.add_message_tags(A, int(b["answer"]), ["stolen"])
    assert await w.tags.tags_for_message(B, int(b["answer"])) == ["beta", "green"]

    assert [p.title for p in await w.notes.all(A)] == ["Page alpha"]
    assert await w.notes.get(A, int(b["page"])) is None
    assert await w.notes.by_ids(A, [int(a["page"]), int(b["page"])]) == [
        await w.notes.get(A, int(a["page"]))
    ]
    assert [o.title for o in await w.notes.outline(A, 10)] == ["Page alpha"]
    assert await w.notes.linked_ids(A, sb) == []
    assert await w.notes.linked_ids(A, sa) == [a["page"]]

    assert [e.title for e in await w.knowledge.page(A, limit=10, before_id=None)] == ["alpha title"]
    assert len(await w.knowledge.page(ALL_SPACES, limit=10, before_id=None)) == 2
    assert await w.knowledge.get(A, int(b["entry"])) is None
    assert await w.knowledge.recent_for_query(A, "beta query", "2000") is None
    assert await w.knowledge.delete(A, int(b["entry"])) is None

    assert await w.attachments.get(A, sb, str(b["attachment"])) is None
    assert await w.attachments.get(A, sa, str(b["attachment"])) is None
    assert await w.attachments.list_for_session(A, sb) == []

    assert [c.channel_id for c in await w.topics.channels(A)] == [11]
    assert len(await w.topics.channels(ALL_SPACES, enabled_only=True)) == 2
    assert await w.topics.get(A, 22) is None
    assert await w.topics.post_for_message(A, 220) is None
    assert await w.topics.recent_topics(A, 22) == []
    assert await w.topics.posts_since(A, 22, "2000") == 0

    assert [x.word for x in await w.pool.words(A, 11)] == ["alpha", "shared"]
    assert await w.pool.words(A, 22) == []
    assert {x.word for x in await w.pool.snapshot(A)} == {"alpha", "shared"}

    assert [log.response_text for log in await w.logs.list(ApiLogFilter(space_id=A))] == ["alpha"]


async def test_writes_cannot_reach_another_space(db: Database) -> None:
    w = await fill(db)
    a, b = w.ids[A], w.ids[B]
    sb = str(b["session"])
    with pytest.raises(sqlite3.IntegrityError):
        await w.messages.add(A, sb, "user", "into B's session from A")
    with pytest.raises(NotFoundError):
        await w.notes.update(A, int(b["page"]), title=None, content="hijack")
    with pytest.raises(NotFoundError):
        await w.notes.append(A, int(b["page"]), "hijack", 1000)
    assert not await w.notes.delete(A, int(b["page"]))
    with pytest.raises(NotFoundError):
        await w.notes.link(A, sb, int(a["page"]))
    with pytest.raises(NotFoundError):
        await w.notes.link(A, str(a["session"]), int(b["page"]))
    with pytest.raises(ValidationError):
        await w.notes.set_links(A, str(a["session"]), [int(b["page"])])
    assert not await w.notes.unlink(A, sb, int(b["page"]))
    with pytest.raises(ConflictError):
        await w.topics.upsert(A, 22, {"enabled": False})
    assert await w.memories.summarize_messages(A, sb, [int(b["answer"])], "x") is None
    await w.sessions.close(A, sb)
    await w.sessions.set_model(A, sb, "hijack")
    assert not await w.sessions.delete(A, sb)
    session_b = await w.sessions.get(B, sb)
    assert session_b is not None and session_b.closed_at is None and session_b.model is None
    page_b = await w.notes.get(B, int(b["page"]))
    assert page_b is not None and page_b.content == "beta body"
    assert await w.notes.linked_ids(B, sb) == [b["page"]]
    assert (await w.topics.get(B, 22)).enabled  # type: ignore[union-attr]


async def test_titles_sections_and_order_are_per_space(db: Database) -> None:
    notes = NoteRepository(db)
    first_a = await notes.create(A, "Same", "", "x")
    first_b = await notes.create(B, "Same", "", "y")
    second_b = await notes.create(B, "Other", "", "x")
    assert (first_a.position, first_b.position, second_b.position) == (0, 0, 1)
    with pytest.raises(ConflictError):
        await notes.create(A, "same", "", "")
    assert await notes.rename_section(B, "x", "z") == 1
    assert [p.section for p in await notes.all(A)] == ["x"], "A's section untouched"
    with pytest.raises(ValidationError):
        await notes.reorder(A, first_a.id, "x", [first_a.id, first_b.id])


async def test_move_a_note_page_and_a_knowledge_entry(db: Database) -> None:
    w = await fill(db)
    a = w.ids[A]
    page_id = int(a["page"])
    await w.notes.create(B, "Second", "", "sec")
    moved = await w.notes.move(A, page_id, B)
    assert moved.space_id == B and moved.position == 2, "after B's pages of its section"
    assert await w.notes.all(A) == []
    assert await w.notes.linked_ids(A, str(a["session"])) == [], "links stay behind, dropped"
    assert [p.title for p in await w.notes.all(B)] == ["Page beta", "Second", "Page alpha"]
    await w.notes.create(A, "Page beta", "", "")
    with pytest.raises(ConflictError):
        await w.notes.move(A, (await w.notes.all(A))[0].id, B)
    with pytest.raises(NotFoundError):
        await w.notes.move(A, page_id, B)

    entry = await w.knowledge.move(A, int(a["entry"]), B, "web_search/guild_200/alpha.md")
    assert entry is not None and entry.space_id == B and entry.session_id is None
    assert entry.sources == [KnowledgeSource("alpha", "https://alpha.example")]
    assert await w.knowledge.get(A, int(a["entry"])) is None
    assert await w.knowledge.move(A, int(a["entry"]), B, None) is None


async def test_purge_removes_one_space_and_leaves_the_other(db: Database) -> None:
    w = await fill(db)
    spaces = SpaceRepository(db)
    before_b = await table_counts(db, B)
    counts = await spaces.purge(A)
    assert counts.counts["sessions"] == 1 and counts.counts["note_pages"] == 1
    assert counts.total >= 12
    assert await table_counts(db, A) == dict.fromkeys(before_b, 0)
    assert await table_counts(db, B) == before_b
    assert await spaces.get(A) is None
    assert await db.scalar("SELECT COUNT(*) FROM knowledge_sources") == 1
    if db.dialect == "sqlite":  # PostgreSQL enforces foreign keys on every write
        assert await db.scalar("PRAGMA foreign_key_check") is None
    with pytest.raises(NotFoundError):
        await spaces.purge(A)
    assert (await w.sessions.get(B, str(w.ids[B]["session"]))) is not None


# A row for each space table `fill` leaves empty; `:name` stands for the space's own ids.
_NAMED = re.compile(r":([a-z]+)")
MORE_ROWS: dict[str, str] = {
    "tool_calls": "INSERT INTO tool_calls (space_id, session_id, message_id, tool, ok, created_at) "
    "VALUES (:space, :session, :message, 'recall', 1, '2026-01-01')",
    "directory_channels": "INSERT INTO directory_channels (channel_id, space_id, name, kind, "
    "updated_at) VALUES (:channel, :space, 'general', 'text', '2026-01-01')",
    "member_facts": "INSERT INTO member_facts (space_id, member_id, fact, source, session_id, "
    "created_at) VALUES (:space, 'u1', 'likes tea', 'tool', :session, '2026-01-01')",
    "member_memory": "INSERT INTO member_memory (space_id, member_id, enabled, switched_at) "
    "VALUES (:space, 'u1', 0, '2026-01-01')",
    "recall_terms": "INSERT INTO recall_terms (id, space_id, terms) VALUES (:message, :space, 'x')",
    "message_embeddings": "INSERT INTO message_embeddings (space_id, message_id, model, vector, "
    "created_at) VALUES (:space, :message, 'm', :blob, '2026-01-01')",
    "word_pool_authors": "INSERT INTO word_pool_authors (space_id, channel_id, word, author_id) "
    "VALUES (:space, :channel, 'tea', 'u1')",
    "note_versions": "INSERT INTO note_versions (space_id, version) VALUES (:space, 3)",
    "token_usage": "INSERT INTO token_usage (space_id, day, member_id, used, updated_at) "
    "VALUES (:space, '2026-01-01', '', 10, '2026-01-01')",
}


async def fill_every_space_table(db: Database) -> World:
    """`fill`, then a row of A and of B in every space table it leaves empty."""
    w = await fill(db)
    for space in (A, B):
        ids = w.ids[space]
        values = {"space": space, "session": ids["session"], "message": ids["answer"]}
        values |= {"channel": int(ids["channel"]) + 5000, "blob": b"\0\0\0\0"}
        for table, sql in MORE_ROWS.items():
            if await db.scalar(f"SELECT COUNT(*) FROM {table} WHERE space_id = ?", (space,)):
                continue
            names = _NAMED.findall(sql)
            await db.execute(_NAMED.sub("?", sql), tuple(values[name] for name in names))
    return w


async def test_purge_empties_every_space_table_and_counts_each(db: Database) -> None:
    await fill_every_space_table(db)
    before_a, before_b = await table_counts(db, A), await table_counts(db, B)
    assert sorted(before_a) == sorted(SPACE_TABLES), "every table with a space_id is declared"
    empty = [table for table in SPACE_TABLES if not before_a[table] or not before_b[table]]
    assert empty == [], f"give these tables a row in MORE_ROWS: {empty}"
    counts = await SpaceRepository(db).purge(A)
    assert counts.counts == before_a, "the purge reports every space table"
    assert await table_counts(db, A) == dict.fromkeys(SPACE_TABLES, 0)
    assert await table_counts(db, B) == before_b


async def table_counts(db: Database, space: str) -> dict[str, int]:
    """Rows of `space` in every table that has a space column."""
    if db.dialect == "postgresql":
        sql = (
            "SELECT table_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND column_name = 'space_id'"
        )
    else:
        sql = (
            "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) p "
            "WHERE m.type = 'table' AND p.name = 'space_id'"
        )
    tables = [row[0] for row in await db.fetchall(sql)]
    return {
        table: int(await db.scalar(f"SELECT COUNT(*) FROM {table} WHERE space_id = ?", (space,)))
        for table in sorted(tables)
    }


async def test_word_pool_keeps_the_most_recent_words_per_channel(db: Database) -> None:
    pool = WordPoolRepository(db)
    await pool.add(A, 1, ["a", "b", "a"], keep=3, at="2026-01-01T00:00:01")
    await pool.add(A, 1, ["c", "d"], keep=3, at="2026-01-01T00:00:02")
    await pool.add(A, 2, ["z"], keep=3, at="2026-01-01T00:00:03")
    words = await pool.words(A, 1)
    assert [(w.word, w.count) for w in words] == [("c", 1), ("d", 1), ("a", 2)]
    await pool.add(A, 1, ["a"], keep=3, at="2026-01-01T00:00:04")
    assert [(w.word, w.count) for w in await pool.words(A, 1)] == [("a", 3), ("c", 1), ("d", 1)]
    assert [w.word for w in await pool.words(A, 2)] == ["z"]
    assert await pool.clear(A, 1) == 3
