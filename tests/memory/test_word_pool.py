"""WordPool: per-(space, channel) noun pools, bounded, persisted (a restart sees the same pool)."""

from __future__ import annotations

import random
import string
from collections.abc import AsyncIterator, Iterator

import pytest

from bot.memory.japanese import InProcessAnalyzer
from bot.memory.word_pool import POOL_SIZE, WordPool
from bot.store.engine.database import Database
from bot.store.repos.word_pool import WordPoolRepository

TOPICS = ["ラーメン", "カメラ", "写真", "旅行", "沖縄", "天気", "映画", "音楽", "猫", "公園"]
A = "guild:1"
B = "guild:2"


@pytest.fixture(scope="module")
def analyzer() -> Iterator[InProcessAnalyzer]:
    a = InProcessAnalyzer()
    yield a
    a.close()


@pytest.fixture
async def db(suite_database_url: str) -> AsyncIterator[Database]:
    database = await Database.connect(suite_database_url)
    yield database
    await database.close()


def one_noun_words(count: int) -> list[str]:
    """Distinct Latin words Janome keeps as one noun each (no digits, no stop words)."""
    letters = string.ascii_lowercase
    return [f"topic{letters[i // 26 % 26]}{letters[i % 26]}" for i in range(count)]


def chat_line(i: int) -> str:
    first, second = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
    return f"昨日は{first}の話をした。{second}も気になる"


async def test_each_message_adds_its_nouns(analyzer: InProcessAnalyzer, db: Database) -> None:
    pool = WordPool(analyzer, WordPoolRepository(db))
    assert await pool.add_text(A, 10, "東京でラーメンを食べた") == ["東京", "ラーメン"]
    assert await pool.add_text(A, 10, "https://example.com <@1>") == []
    assert sorted(await pool.snapshot(A)) == ["ラーメン", "東京"]
    assert [(w.word, w.count) for w in await pool.words(A, 10)] == [("ラーメン", 1), ("東京", 1)]


async def test_pools_are_per_space_and_channel(analyzer: InProcessAnalyzer, db: Database) -> None:
    pool = WordPool(analyzer, WordPoolRepository(db))
    await pool.add_texts(A, 10, ["猫とカメラ"])
    await pool.add_texts(A, 11, ["沖縄の天気"])
    await pool.add_texts(B, 10, ["映画と音楽"])
    assert {w.word for w in await pool.words(A, 10)} == {"猫", "カメラ"}
    assert {w.word for w in await pool.words(A, 11)} == {"沖縄", "天気"}
    assert {w.word for w in await pool.words(B, 10)} == {"映画", "音楽"}
    rng = random.Random(5)
    assert {await pool.pick(B, 10, rng) for _ in range(30)} == {"映画", "音楽"}
    assert await pool.pick(B, 11, rng) is None


async def test_the_201st_word_evicts_the_least_recent(
    analyzer: InProcessAnalyzer, db: Database
) -> None:
    words = one_noun_words(POOL_SIZE + 1)
    pool = WordPool(analyzer, WordPoolRepository(db))
    for word in words[:POOL_SIZE]:
        await pool.add_text(A, 1, f"{word} について")
    assert sorted(w.word for w in await pool.words(A, 1)) == sorted(words[:POOL_SIZE])
    await pool.add_text(A, 1, f"{words[POOL_SIZE]} について")
    kept = [w.word for w in await pool.words(A, 1)]
    assert len(kept) == POOL_SIZE
    assert words[0] not in kept
    assert kept[0] == words[POOL_SIZE], "most recently seen first"


async def test_pool_after_restart_equals_pool_before(
    analyzer: InProcessAnalyzer, suite_database_url: str
) -> None:
    db = await Database.connect(suite_database_url)
    live = WordPool(analyzer, WordPoolRepository(db))
    for i in range(260):
        await live.add_text(A, 7, chat_line(i))
    before = await live.words(A, 7)
    await db.close()

    reopened = await Database.connect(suite_database_url)
    restarted = WordPool(analyzer, WordPoolRepository(reopened))
    assert len(before) == len(set(TOPICS)) and await restarted.words(A, 7) == before
    await reopened.close()


async def test_pick_respects_exclusions_and_counts(
    analyzer: InProcessAnalyzer, db: Database
) -> None:
    pool = WordPool(analyzer, WordPoolRepository(db))
    assert await pool.pick(A, 1, random.Random(1)) is None
    await pool.add_text(A, 1, "猫とカメラと写真")
    rng = random.Random(7)
    picks = {await pool.pick(A, 1, rng, exclude={"猫"}) for _ in range(50)}
    assert picks == {"カメラ", "写真"}
    assert await pool.pick(A, 1, rng, exclude={"猫", "カメラ", "写真"}) is None
    for _ in range(30):
        await pool.add_text(A, 1, "猫")
    counts = [await pool.pick(A, 1, rng) for _ in range(200)]
    assert counts.count("猫") > 150, "a word seen more often is picked more often"


async def test_pick_exclusion_ignores_case(analyzer: InProcessAnalyzer, db: Database) -> None:
    pool = WordPool(analyzer, WordPoolRepository(db))
    await pool.add_text(A, 1, "Python and Kubernetes")
    assert await pool.pick(A, 1, random.Random(0), exclude={"python"}) == "Kubernetes"


async def test_one_entry_per_case_folded_word(analyzer: InProcessAnalyzer, db: Database) -> None:
    pool = WordPool(analyzer, WordPoolRepository(db))
    await pool.add_text(A, 12, "Python is fun", author="1")
    await pool.add_texts(A, 12, ["I write python and PYTHON", "python と Rust"], ["2", "3"])
    assert [(w.word, w.count) for w in await pool.words(A, 12)] == [("Python", 4), ("Rust", 1)]
    await pool.add_texts(A, 13, ["rust", "Rust"])
    assert [(w.word, w.count) for w in await pool.words(A, 13)] == [("rust", 2)], (
        "a new word keeps its first spelling"
    )
    authors = await db.fetchall(
        "SELECT word, author_id FROM word_pool_authors WHERE space_id = ? AND channel_id = 12 "
        "ORDER BY author_id",
        (A,),
    )
    assert [(row["word"], row["author_id"]) for row in authors] == [
        ("Python", "1"),
        ("Python", "2"),
        ("Python", "3"),
        ("Rust", "3"),
    ], "who brought a word follows it to its one entry"
