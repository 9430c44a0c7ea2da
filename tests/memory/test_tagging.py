"""Tagging: keyword tags without an LLM, LLM tags parsed robustly, fallback, backfill, queries."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from bot.errors import LLMError
from bot.llm.types import Completion
from bot.memory.japanese import InProcessAnalyzer
from bot.memory.tagging import MAX_TAG_CHARS, Tagger, keyword_tags, parse_llm_tags
from bot.store.engine.connection import Connection, Cursor, Statement, utcnow
from bot.store.engine.database import Database
from bot.store.repos.tags import TagRepository


class NoLLM:
    """A completer that fails the test when it is called."""

    async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Completion:
        pytest.fail("keyword tagging must not call the LLM")


class ScriptedLLM:
    """Answers with a fixed text (or raises) and records every call."""

    def __init__(self, answer: str = "", error: Exception | None = None) -> None:
        self.answer = answer
        self.error = error
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []

    async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Completion:
        self.calls.append((messages, kwargs))
        if self.error is not None:
            raise self.error
        return Completion(text=self.answer)


@pytest.fixture(scope="module")
def analyzer() -> Iterator[InProcessAnalyzer]:
    a = InProcessAnalyzer()
    yield a
    a.close()


@pytest.fixture
async def db(suite_database_url: str) -> AsyncIterator[Database]:
    database = await Database.connect(suite_database_url)
    now = utcnow()
    for space in (S, OTHER):
        await database.execute(
            "INSERT INTO spaces (id, kind, created_at) VALUES (?, 'guild', ?)", (space, now)
        )
    await database.executemany(
        "INSERT INTO sessions (id, space_id, title, discord_channel_id, created_at, updated_at) "
        "VALUES (?, ?, 't', ?, ?, ?)",
        [("s1", S, 1, now, now), ("s2", S, 2, now, now), ("o1", OTHER, 1, now, now)],
    )
    yield database
    await database.close()


async def add_message(db: Database, content: str, role: str = "user", session: str = "s1") -> int:
    return await db.insert(
        "INSERT INTO messages (space_id, session_id, role, content, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (OTHER if session == "o1" else S, session, role, content, utcnow()),
    )


async def add_memory(db: Database, summary: str, session: str = "s1") -> int:
    return await db.insert(
        "INSERT INTO memories (space_id, session_id, summary, created_at) VALUES (?, ?, ?, ?)",
        (OTHER if session == "o1" else S, session, summary, utcnow()),
    )


S = "guild:1"
OTHER = "guild:2"


# keyword_tags ----------------------------------------------------------------------------


def test_keyword_tags_rank_by_frequency() -> None:
    nouns = ["カメラ", "写真", "カメラ", "公園", "写真", "カメラ", "猫"]
    assert keyword_tags(nouns) == ["カメラ", "写真", "公園"]


def test_keyword_tags_ties_prefer_rarer_then_longer_then_earlier() -> None:
    assert keyword_tags(["ねこ", "猫", "ラーメン", "東京"]) == ["ラーメン", "東京", "猫"]
    assert keyword_tags(["東京", "大阪", "京都"]) == ["東京", "大阪", "京都"]


def test_keyword_tags_merge_case_and_are_deterministic() -> None:
    nouns = ["Python", "python", "Rust", "Go", "Rust", "PYTHON"]
    assert keyword_tags(nouns) == ["Python", "Rust", "Go"]
    assert keyword_tags(list(reversed(nouns))) == ["PYTHON", "Rust", "Go"]


def test_keyword_tags_with_few_candidates() -> None:
    assert keyword_tags(["猫", "猫"]) == ["猫"]
    assert keyword_tags([]) == []
    assert keyword_tags(["a" * 50]) == ["a" * MAX_TAG_CHARS]


# parse_llm_tags --------------------------------------------------------------------------


def test_parse_numbered_hashed_quoted_tags() -> None:
    assert parse_llm_tags("1. 猫, #犬 , 'カメラ'") == ["猫", "犬", "カメラ"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<think>maybe dogs?</think>\nTags: cats, dogs, parks, birds", ["cats", "dogs", "parks"]),
        ("1) ラーメン\n2) 「東京」\n3) 旅行", ["ラーメン", "東京", "旅行"]),
        ("- 猫\n- 猫\n- Cat\n- cat", ["猫", "Cat"]),
        ("タグ：猫、犬、鳥。", ["猫", "犬", "鳥"]),
        ("猫 犬 鳥", ["猫", "犬", "鳥"]),
        ("", []),
        ("#" * 5, []),
    ],
)
def test_parse_variants(reply: str, expected: list[str]) -> None:
    assert parse_llm_tags(reply) == expected


def test_parse_caps_length() -> None:
    tags = parse_llm_tags("x" * 80 + ", b, c")
    assert tags == ["x" * MAX_TAG_CHARS, "b", "c"]


# Tagger ----------------------------------------------------------------------------------


async def test_keyword_mode_gives_three_tags_without_llm(
    db: Database, analyzer: InProcessAnalyzer
) -> None:
    repo = TagRepository(db)
    tagger = Tagger(analyzer, repo, NoLLM(), lambda: "keywords")
    text = "カメラを買って公園で写真を撮った。カメラのレンズが良い。写真は猫の写真"
    message_id = await add_message(db, text)
    tags = await tagger.tag_message(S, message_id, text)
    assert tags == ["写真", "カメラ", "レンズ"]
    assert await repo.tags_for_message(S, message_id) == tags
    assert await db.scalar("SELECT tagged_at FROM messages WHERE id = ?", (message_id,))


class CountingAnalyzer:
    """The real analyzer, counting the trips made to it."""

    def __init__(self, inner: InProcessAnalyzer) -> None:
        self.inner = inner
        self.trips = 0

    async def nouns_async(self, text: str) -> list[str]:
        self.trips += 1
        return await self.inner.nouns_async(text)

    async def nouns_many(self, texts: Sequence[str]) -> list[list[str]]:
        self.trips += 1
        return await self.inner.nouns_many(texts)


def count_transactions(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts write transactions from now on, `db.transaction()` or `db.write_batch` (one
    element per transaction)."""
    opened: list[int] = []
    original, original_batch = db.transaction, db.write_batch

    @asynccontextmanager
    async def counting() -> AsyncIterator[Connection]:
        opened.append(1)
        async with original() as conn:
            yield conn

    async def counting_batch(statements: Sequence[Statement]) -> list[Cursor]:
        opened.append(1)
        return await original_batch(statements)

    monkeypatch.setattr(db, "transaction", counting)
    monkeypatch.setattr(db, "write_batch", counting_batch)
    return opened


async def test_a_turns_messages_are_tagged_with_one_analyzer_trip_and_one_write(
    db: Database, analyzer: InProcessAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = TagRepository(db)
    counting = CountingAnalyzer(analyzer)
    tagger = Tagger(counting, repo, NoLLM(), lambda: "keywords")
    question = "カメラを買って公園で写真を撮った。カメラのレンズが良い。写真は猫の写真"
    answer = "沖縄旅行の写真。沖縄の海と沖縄の空、写真とカメラ"
    silent = "うん、そうだね"
    ids = [await add_message(db, text) for text in (question, answer, silent)]
    await repo.add_message_tags(S, ids[1], ["old"])  # replaced, as by tag_message
    transactions = count_transactions(db, monkeypatch)
    tags = await tagger.tag_messages(S, list(zip(ids, (question, answer, silent), strict=True)))
    assert tags == [["写真", "カメラ", "レンズ"], ["写真", "沖縄", "沖縄旅行"], []]
    assert (counting.trips, len(transactions)) == (1, 1)
    for message_id, expected in zip(ids, tags, strict=True):
        assert await repo.tags_for_message(S, message_id) == expected
    untagged = await db.scalar("SELECT COUNT(*) FROM messages WHERE tagged_at IS NULL")
    assert untagged == 0, "a message without nouns is marked tagged too"


async def test_batched_tags_skip_gone_messages_and_stay_in_their_space(db: Database) -> None:
    repo = TagRepository(db)
    mine = await add_message(db, "x")
    theirs = await add_message(db, "y", session="o1")
    stored = await repo.add_many_message_tags(S, {mine: ["a", "b"], theirs: ["c"], 9999: ["d"]})
    assert stored == {mine}
    assert await repo.tags_for_message(S, mine) == ["a", "b"]
    assert await repo.tags_for_message(OTHER, theirs) == []
    assert await db.scalar("SELECT tagged_at FROM messages WHERE id = ?", (theirs,)) is None
    assert await repo.add_many_message_tags(S, {9999: ["d"]}) == set()
    assert await repo.add_many_message_tags(S, {}) == set()
    assert await db.scalar("SELECT COUNT(*) FROM message_tags") == 2


async def test_batched_tagging_in_llm_mode_asks_once_per_message(
    db: Database, analyzer: InProcessAnalyzer
) -> None:
    llm = ScriptedLLM("猫, 犬, 鳥")
    repo = TagRepository(db)
    tagger = Tagger(analyzer, repo, llm, lambda: "llm")
    ids = [await add_message(db, text) for text in ("ペットの話", "動物の話")]
    tags = await tagger.tag_messages(
        S, [(ids[0], "ペットの話"), (ids[1], "動物の話")], session_id="s1"
    )
    assert tags == [["猫", "犬", "鳥"], ["猫", "犬", "鳥"]]
    assert [call[0][-1]["content"] for call in llm.calls] == ["ペットの話", "動物の話"]
    assert all(call[1]["session_id"] == "s1" for call in llm.calls)
    assert await repo.tags_for_message(S, ids[1]) == ["猫", "犬", "鳥"]


async def test_llm_mode_uses_one_call_and_parses(db: Database, analyzer: InProcessAnalyzer) -> None:
    llm = ScriptedLLM("1. 猫, #犬 , 'カメラ'")
    repo = TagRepository(db)
    tagger = Tagger(analyzer, repo, llm, lambda: "llm")
    memory_id = await add_memory(db, "ペットと写真についての会話の要約")
    assert await tagger.tag_memory(S, memory_id, "ペットと写真についての会話の要約") == [
        "猫",
        "犬",
        "カメラ",
    ]
    assert await repo.tags_for_memory(S, memory_id) == ["猫", "犬", "カメラ"]
    assert len(llm.calls) == 1
    messages, kwargs = llm.calls[0]
    assert kwargs["purpose"] == "tagging"
    assert messages[-1]["content"] == "ペットと写真についての会話の要約"


async def test_llm_failure_falls_back_to_keywords(
    db: Database, analyzer: InProcessAnalyzer, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLLM(error=LLMError("model offline"))
    tagger = Tagger(analyzer, TagRepository(db), llm, lambda: "llm")
    text = "沖縄旅行の写真。沖縄の海と沖縄の空、写真とカメラ"
    message_id = await add_message(db, text)
    with caplog.at_level(logging.WARNING, logger="bot.memory.tagging"):
        tags = await tagger.tag_message(S, message_id, text)
    assert tags == ["写真", "沖縄", "沖縄旅行"]
    assert len(llm.calls) == 1
    assert "LLMError" in caplog.text
    assert text not in caplog.text


async def test_llm_short_answer_is_topped_up(db: Database, analyzer: InProcessAnalyzer) -> None:
    tagger = Tagger(analyzer, TagRepository(db), ScriptedLLM("旅行"), lambda: "llm")
    assert await tagger.tags_for_text("沖縄の海と空と旅行") == ["旅行", "沖縄", "海"]


async def test_llm_mode_skips_empty_text(db: Database, analyzer: InProcessAnalyzer) -> None:
    llm = ScriptedLLM("a, b, c")
    tagger = Tagger(analyzer, TagRepository(db), llm, lambda: "llm")
    assert await tagger.tags_for_text("   ") == []
    assert llm.calls == []


async def test_mode_is_read_on_every_call(db: Database, analyzer: InProcessAnalyzer) -> None:
    mode = {"value": "keywords"}
    llm = ScriptedLLM("x, y, z")
    tagger = Tagger(analyzer, TagRepository(db), llm, lambda: mode["value"])
    assert await tagger.tags_for_text("猫") == ["猫"]
    mode["value"] = "llm"
    assert await tagger.tags_for_text("猫") == ["x", "y", "z"]
    assert len(llm.calls) == 1


async def test_backfill_tags_everything_once(db: Database, analyzer: InProcessAnalyzer) -> None:
    repo = TagRepository(db)
    ids = [await add_message(db, f"カメラと写真と公園の話 {i}") for i in range(7)]
    empty_id = await add_message(db, "うん、そうだね")
    system_id = await add_message(db, "システムの設定", role="system")
    memory_ids = [await add_memory(db, "旅行と沖縄と海の要約") for _ in range(3)]
    other_id = await add_message(db, "映画と音楽", session="o1")
    tagger = Tagger(analyzer, repo, NoLLM(), lambda: "keywords")

    assert await tagger.backfill() == 7 + 1 + 3 + 1
    assert await repo.tags_for_message(OTHER, other_id) == ["映画", "音楽"]
    assert await repo.tags_for_message(S, other_id) == []
    for message_id in ids:
        assert await repo.tags_for_message(S, message_id) == ["カメラ", "写真", "公園"]
    assert await repo.tags_for_message(S, empty_id) == []
    for memory_id in memory_ids:
        assert await repo.tags_for_memory(S, memory_id) == ["旅行", "沖縄", "要約"]
    assert await db.scalar("SELECT COUNT(*) FROM messages WHERE tagged_at IS NULL") == 1
    assert await db.scalar("SELECT tagged_at FROM messages WHERE id = ?", (system_id,)) is None

    rows_before = await db.scalar("SELECT COUNT(*) FROM message_tags")
    assert await tagger.backfill() == 0
    assert await db.scalar("SELECT COUNT(*) FROM message_tags") == rows_before


async def test_backfill_respects_limit(db: Database, analyzer: InProcessAnalyzer) -> None:
    for i in range(5):
        await add_message(db, f"猫の話 {i}")
    await add_memory(db, "犬の要約")
    tagger = Tagger(analyzer, TagRepository(db), NoLLM(), lambda: "keywords")
    assert await tagger.backfill(limit=3) == 3
    assert await tagger.backfill(limit=3) == 3
    assert await tagger.backfill(limit=3) == 0


# TagRepository ---------------------------------------------------------------------------


async def test_retagging_replaces_tags(db: Database) -> None:
    repo = TagRepository(db)
    message_id = await add_message(db, "x")
    assert await repo.add_message_tags(S, message_id, ["a", "b", "c"])
    assert await repo.add_message_tags(S, message_id, ["d"])
    assert await repo.tags_for_message(S, message_id) == ["d"]


async def test_tagging_a_deleted_row_is_harmless(db: Database) -> None:
    repo = TagRepository(db)
    assert await repo.add_message_tags(S, 9999, ["a"]) is False
    assert await repo.add_memory_tags(S, 9999, ["a"]) is False
    assert await db.scalar("SELECT COUNT(*) FROM message_tags") == 0


async def test_related_tags_rank_by_co_occurrence(db: Database) -> None:
    repo = TagRepository(db)
    tagged = [
        ["猫", "カメラ", "写真"],
        ["猫", "カメラ", "公園"],
        ["猫カフェ", "渋谷", "カメラ"],
        ["犬", "公園", "散歩"],
        ["犬", "公園", "散歩"],
    ]
    for tags in tagged:
        assert await repo.add_message_tags(S, await add_message(db, "x"), tags)
    assert await repo.add_memory_tags(S, await add_memory(db, "y"), ["猫", "写真", "旅行"])

    related = await repo.related_tags(S, "猫", limit=10)
    assert related[:2] == ["カメラ", "写真"]
    assert set(related[2:]) == {"公園", "渋谷", "旅行"}
    assert "猫" not in related and "猫カフェ" not in related
    assert "散歩" not in related and "犬" not in related
    assert await repo.related_tags(S, "猫", limit=1) == ["カメラ"]
    assert await repo.related_tags(S, "猫", exclude={"カメラ"}) == ["写真", *related[2:]]
    assert await repo.related_tags(S, "犬") == ["公園", "散歩"]


async def test_related_tags_bad_input(db: Database) -> None:
    repo = TagRepository(db)
    assert await repo.add_message_tags(S, await add_message(db, "x"), ["100%", "割引"])
    assert await repo.related_tags(S, "") == []
    assert await repo.related_tags(S, "   ") == []
    assert await repo.related_tags(S, "%") == ["割引"]
    assert await repo.related_tags(S, "_") == []
    assert await repo.related_tags(S, "存在しない") == []


async def test_recent_tags_newest_first_and_by_session(db: Database) -> None:
    repo = TagRepository(db)
    await repo.add_message_tags(S, await add_message(db, "x", session="s1"), ["古い", "共通"])
    await repo.add_message_tags(S, await add_message(db, "x", session="s2"), ["別部屋"])
    await repo.add_memory_tags(S, await add_memory(db, "y", session="s1"), ["要約タグ"])
    await repo.add_message_tags(S, await add_message(db, "x", session="s1"), ["新しい", "共通"])

    await repo.add_message_tags(OTHER, await add_message(db, "x", session="o1"), ["よそ"])
    assert await repo.recent_tags(S, 10) == ["共通", "新しい", "要約タグ", "別部屋", "古い"]
    assert await repo.recent_tags(S, 2) == ["共通", "新しい"]
    assert await repo.recent_tags(S, 10, channel_id=1) == ["共通", "新しい", "要約タグ", "古い"]
    assert await repo.recent_tags(S, 10, channel_id=2) == ["別部屋"]
    assert await repo.recent_tags(S, 10, channel_id=3) == []
    assert await repo.recent_tags(OTHER, 10, channel_id=1) == ["よそ"]
    assert await repo.recent_tags(S, 0) == []
