"""The cockpit's store: activity figures, full-text search and its index, tool call rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiosqlite
import pytest

from bot.errors import ValidationError
from bot.store.engine.database import Database
from bot.store.engine.migrate import migrate
from bot.store.reads.activity import Activity, ActivityRepository, BucketSize, activity_range
from bot.store.reads.search import SearchRepository, parse_snippet
from bot.store.repos.knowledge import KnowledgeRepository
from bot.store.repos.messages import MessageRepository
from bot.store.repos.notes import NoteRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.repos.tool_calls import ToolCallRepository, ToolCallSource
from bot.store.schema.migrations import number_of
from bot.store.schema.v4_cockpit import migrate_cockpit
from bot.store.spaces import ALL_SPACES, SpaceScope

A = "guild:111"
B = "guild:222"
DAY = datetime(2026, 3, 1, tzinfo=UTC)


async def log_call(
    db: Database,
    at: str,
    latency: int,
    *,
    model: str = "m1",
    space: str | None = A,
    error: str | None = None,
    tokens: tuple[int, int] = (0, 0),
    purpose: str = "chat",
) -> None:
    """An api_logs row at a given time (the gateway writes the current time)."""
    await db.execute(
        "INSERT INTO api_logs (session_id, space_id, model, purpose, request_json, error, "
        "latency_ms, prompt_tokens, completion_tokens, created_at) "
        "VALUES (NULL, ?, ?, ?, '{}', ?, ?, ?, ?, ?)",
        (space, model, purpose, error, latency, *tokens, at),
    )


def at(hours: float) -> str:
    return (DAY + timedelta(hours=hours)).isoformat(timespec="microseconds")


async def report(
    db: Database, scope: SpaceScope = ALL_SPACES, bucket: BucketSize = "day"
) -> Activity:
    return await ActivityRepository(db).report(scope, DAY, DAY + timedelta(days=2), bucket)


async def test_latency_percentiles_are_exact_at_1_2_and_20_calls(db: Database) -> None:
    await log_call(db, at(1), 70, model="one")
    await log_call(db, at(1), 300, model="two")
    await log_call(db, at(2), 100, model="two")
    for latency in range(20, 0, -1):  # 20 calls of 10..200 ms, written out of order
        await log_call(db, at(3), latency * 10, model="twenty", error="x" if latency == 1 else None)
    models = {m.model: m for m in (await report(db)).models}
    assert (models["one"].p50_ms, models["one"].p95_ms) == (70, 70)
    assert (models["two"].p50_ms, models["two"].p95_ms) == (100, 300)
    assert (models["twenty"].p50_ms, models["twenty"].p95_ms) == (100, 190)
    assert (models["twenty"].calls, models["twenty"].errors) == (20, 1)


async def test_buckets_split_at_midnight_and_hour(db: Database) -> None:
    await log_call(db, "2026-03-01T23:59:59.999000+00:00", 5, tokens=(10, 1))
    await log_call(db, "2026-03-02T00:00:00.000000+00:00", 5, tokens=(20, 2), error="boom")
    await log_call(db, "2026-03-02T00:00:00.000000+00:00", 5, purpose="mcp")  # tool traffic
    days = (await report(db)).buckets
    assert [b.start for b in days] == [
        "2026-03-01T00:00:00.000000+00:00",
        "2026-03-02T00:00:00.000000+00:00",
    ]
    assert [(b.llm_calls, b.prompt_tokens, b.completion_tokens, b.errors) for b in days] == [
        (1, 10, 1, 0),
        (1, 20, 2, 1),
    ]
    hours = (await report(db, bucket="hour")).buckets
    assert len(hours) == 48
    assert (hours[23].start, hours[23].llm_calls) == ("2026-03-01T23:00:00.000000+00:00", 1)
    assert (hours[24].start, hours[24].llm_calls) == ("2026-03-02T00:00:00.000000+00:00", 1)
    assert sum(b.llm_calls for b in hours) == 2


async def test_turns_tool_use_and_the_space_filter(db: Database) -> None:
    sessions, messages, tools = SessionRepository(db), MessageRepository(db), ToolCallRepository(db)
    for space in (A, B):
        session = await sessions.create(space, session_id=f"s-{space[-3:]}")
        question = await messages.add(space, session.id, "user", "q", created_at=at(5))
        await messages.add(
            space, session.id, "assistant", "a", reply_to=question.id, created_at=at(5)
        )
        await tools.add(
            space,
            session.id,
            message_id=question.id,
            call_id="1-1-c",
            tool="web_search",
            arguments={"query": "x"},
            ok=space == A,
            error_text=None if space == A else '{"error": "offline"}',
            duration_ms=40 if space == A else 60,
            created_at=at(5),
        )
    await log_call(db, at(5), 10, space=A)
    await log_call(db, at(5), 10, space=None)
    everything = await report(db)
    assert [(t.tool, t.calls, t.failures, t.avg_ms) for t in everything.tools] == [
        ("web_search", 2, 1, 50)
    ]
    spaces = {s.space_id: s for s in everything.spaces}
    assert set(spaces) == {A, B, None}
    assert (spaces[A].turns, spaces[A].tool_calls, spaces[A].llm_calls) == (1, 1, 1)
    assert (spaces[B].turns, spaces[B].tool_failures, spaces[B].llm_calls) == (1, 1, 0)
    only_b = await report(db, B)
    assert [s.space_id for s in only_b.spaces] == [B]
    assert sum(b.turns for b in only_b.buckets) == 1
    assert sum(b.llm_calls for b in only_b.buckets) == 0
    assert [(t.calls, t.failures) for t in only_b.tools] == [(1, 1)]
    stored = await tools.for_session(B, "s-222")
    assert stored[0].error == "offline" and not stored[0].ok


def test_the_range_is_bounded() -> None:
    now = DAY
    assert activity_range(None, None, "hour", now=now) == (now - timedelta(hours=48), now)
    with pytest.raises(ValidationError, match="31 days"):
        activity_range(now - timedelta(days=32), now, "hour", now=now)
    with pytest.raises(ValidationError, match="before"):
        activity_range(now, now, "day", now=now)


async def test_tool_call_rows_bound_arguments_and_keep_sources(db: Database) -> None:
    session = await SessionRepository(db).create(A)
    tools = ToolCallRepository(db)
    await tools.add(
        A,
        session.id,
        message_id=None,
        call_id="c",
        tool="fetch",
        arguments={"text": "x" * 10_000},
        ok=True,
        sources=[ToolCallSource("T", "https://e.example/")],
    )
    [row] = await tools.for_session(A, session.id)
    assert len(row.arguments) == 2000 and row.arguments.endswith("…")
    assert row.sources == [ToolCallSource("T", "https://e.example/")]
    await SessionRepository(db).delete(A, session.id)
    assert await tools.for_session(A, session.id) == []


async def seed_search(db: Database) -> dict[str, int]:
    """A message and a note with 東京タワー in space A, a cat message in B, knowledge in A."""
    sessions, messages = SessionRepository(db), MessageRepository(db)
    sa = await sessions.create(A, session_id="sa")
    sb = await sessions.create(B, session_id="sb")
    m1 = await messages.add(A, sa.id, "user", "昨日は東京タワーに行きました。", author_name="ken")
    m2 = await messages.add(B, sb.id, "user", "うちの猫がかわいい")
    note = await NoteRepository(db).create(A, "旅行", "東京タワーは333メートル", "")
    entry = await KnowledgeRepository(db).add(
        A,
        query="tokyo tower height",
        title="Tokyo Tower",
        summary="It is 333 m tall.",
        session_id=None,
        md_path=None,
        sources=[],
    )
    return {"m1": m1.id, "m2": m2.id, "note": note.id, "entry": entry.id}


async def test_search_finds_japanese_in_messages_and_notes(db: Database) -> None:
    ids = await seed_search(db)
    search = SearchRepository(db)
    result = await search.search(A, "東京タワー")
    assert result.mode == "fts"
    assert sorted((hit.kind, hit.id) for hit in result.hits) == [
        ("messages", ids["m1"]),
        ("notes", ids["note"]),
    ]
    message = next(hit for hit in result.hits if hit.kind == "messages")
    assert (message.session_id, message.message_id, message.space_id) == ("sa", ids["m1"], A)
    assert message.author == "ken"
    [span] = message.snippet.matches
    assert message.snippet.text[span.start : span.end] == "東京タワー"
    assert "\ue000" not in message.snippet.text
    only_notes = await search.search(A, "タワー", ("notes",))
    assert [hit.kind for hit in only_notes.hits] == ["notes"]
    knowledge = await search.search(ALL_SPACES, "TOKYO tower")
    assert [(hit.kind, hit.id) for hit in knowledge.hits] == [("knowledge", ids["entry"])]


async def test_short_queries_fall_back_to_like_and_scope_by_space(db: Database) -> None:
    ids = await seed_search(db)
    search = SearchRepository(db)
    cat = await search.search(B, "猫")
    assert cat.mode == "like"
    assert [(hit.kind, hit.id) for hit in cat.hits] == [("messages", ids["m2"])]
    [span] = cat.hits[0].snippet.matches
    assert cat.hits[0].snippet.text[span.start : span.end] == "猫"
    assert (await search.search(A, "猫")).hits == []
    assert (await search.search(B, "東京タワー")).hits == []
    mixed = await search.search(A, "東京タワー 旅")  # a long term and a short one: both must match
    assert [(hit.kind, hit.id) for hit in mixed.hits] == [("notes", ids["note"])]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "AND",
        "OR NOT",
        "*",
        "東京*",
        'NEAR("a" "b")',
        "title:x",
        "%",
        "_",
        "\\",
        "a'b",
        "(((",
        "\x00東京タワー",
        '東京タワー"OR"x',
        "-",
    ],
)
async def test_hostile_queries_are_text_never_syntax(db: Database, query: str) -> None:
    await seed_search(db)
    result = await SearchRepository(db).search(ALL_SPACES, query)
    for hit in result.hits:
        assert hit.kind in ("messages", "notes", "knowledge")
    if query == "\x00東京タワー":
        assert len(result.hits) == 2
    if query == "%":
        assert result.hits == [], "a LIKE wildcard is a literal"


async def test_triggers_keep_the_index_in_step_with_edits_and_deletes(db: Database) -> None:
    ids = await seed_search(db)
    search, notes = SearchRepository(db), NoteRepository(db)
    await notes.update(A, ids["note"], title=None, content="スカイツリーは634メートル")
    assert [h.kind for h in (await search.search(A, "東京タワー")).hits] == ["messages"]
    assert [h.id for h in (await search.search(A, "スカイツリー")).hits] == [ids["note"]]
    await notes.delete(A, ids["note"])
    assert (await search.search(A, "スカイツリー")).hits == []
    async with db.transaction() as conn:
        await conn.execute(
            "UPDATE messages SET content = '大阪城' WHERE space_id = ? AND id = ?", (A, ids["m1"])
        )
    assert (await search.search(A, "東京タワー")).hits == []
    assert [h.id for h in (await search.search(A, "大阪城")).hits] == [ids["m1"]]
    await SessionRepository(db).delete(A, "sa")  # messages go by cascade
    assert (await search.search(A, "大阪城")).hits == []
    if db.dialect == "postgresql":
        return  # pg_trgm indexes are ordinary indexes: nothing to keep in step by hand
    assert await db.scalar("SELECT COUNT(*) FROM messages_fts") == 1
    for fts in ("messages_fts", "note_pages_fts", "knowledge_fts"):
        await db.execute(f"INSERT INTO {fts} ({fts}) VALUES ('integrity-check')")


async def test_the_migration_indexes_existing_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    before = number_of(migrate_cockpit) - 1  # the schema version just before it
    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        await migrate(conn, target=before)
        await conn.execute(
            "INSERT INTO spaces (id, kind, created_at) VALUES ('guild:111', 'guild', 'x')"
        )
        await conn.execute(
            "INSERT INTO sessions (id, space_id, created_at, updated_at) "
            "VALUES ('old', 'guild:111', 'x', 'x')"
        )
        await conn.execute(
            "INSERT INTO messages (space_id, session_id, role, content, created_at) "
            "VALUES ('guild:111', 'old', 'user', '古い東京タワーの話', 'x')"
        )
        await conn.execute(
            "INSERT INTO api_logs (session_id, model, request_json, latency_ms, created_at) "
            "VALUES ('old', 'm', '{}', 1, 'x')"
        )
    finally:
        await conn.close()
    db = await Database.open(path)
    try:
        hits = (await SearchRepository(db).search(A, "東京タワー")).hits
        assert [(hit.session_id, hit.kind) for hit in hits] == [("old", "messages")]
        assert await db.scalar("SELECT space_id FROM api_logs") == A
    finally:
        await db.close()


def test_snippet_markers_become_offsets() -> None:
    snippet = parse_snippet("a\ue000bc\ue001d\ue000e\ue001")
    assert snippet.text == "abcde"
    assert [(m.start, m.end) for m in snippet.matches] == [(1, 3), (4, 5)]
