"""WordPool: bounded noun history, reseed from the database equals the live pool."""

from __future__ import annotations

import random
import string
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.memory.japanese import JapaneseAnalyzer
from bot.memory.word_pool import POOL_SIZE, WordPool, load_recent_texts
from bot.store.db import Database, utcnow

TOPICS = ["ラーメン", "カメラ", "写真", "旅行", "沖縄", "天気", "映画", "音楽", "猫", "公園"]


@pytest.fixture(scope="module")
def analyzer() -> Iterator[JapaneseAnalyzer]:
    a = JapaneseAnalyzer()
    yield a
    a.close()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "t.db")
    now = utcnow()
    await database.execute(
        "INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('s1', 't', ?, ?)",
        (now, now),
    )
    yield database
    await database.close()


async def add_message(
    db: Database, content: str, role: str = "user", archived: bool = False
) -> int:
    now = utcnow()
    return await db.execute(
        "INSERT INTO messages (session_id, role, content, archived_at, created_at)"
        " VALUES ('s1', ?, ?, ?, ?)",
        (role, content, now if archived else None, now),
    )


def one_noun_words(count: int) -> list[str]:
    """Distinct Latin words Janome keeps as one noun each (no digits, no stop words)."""
    letters = string.ascii_lowercase
    return [f"topic{letters[i // 26 % 26]}{letters[i % 26]}" for i in range(count)]


def chat_line(i: int) -> str:
    first, second = TOPICS[i % len(TOPICS)], TOPICS[(i * 3 + 1) % len(TOPICS)]
    return f"昨日は{first}の話をした。{second}も気になる"


async def test_each_message_adds_its_nouns(analyzer: JapaneseAnalyzer) -> None:
    pool = WordPool(analyzer)
    assert await pool.add_text("東京でラーメンを食べた") == ["東京", "ラーメン"]
    assert await pool.add_text("https://example.com <@1>") == []
    assert pool.snapshot() == ["東京", "ラーメン"]
    assert len(pool) == 2


async def test_the_201st_word_evicts_the_oldest(analyzer: JapaneseAnalyzer) -> None:
    words = one_noun_words(POOL_SIZE + 1)
    pool = WordPool(analyzer)
    for word in words[:POOL_SIZE]:
        await pool.add_text(f"{word} について")
    assert pool.snapshot() == words[:POOL_SIZE]
    await pool.add_text(f"{words[POOL_SIZE]} について")
    snapshot = pool.snapshot()
    assert len(snapshot) == POOL_SIZE
    assert words[0] not in snapshot
    assert snapshot[0] == words[1]
    assert snapshot[-1] == words[POOL_SIZE]


async def test_reseed_equals_the_pool_built_incrementally(analyzer: JapaneseAnalyzer) -> None:
    texts = [chat_line(i) for i in range(200)]
    live = WordPool(analyzer)
    for text in texts:
        await live.add_text(text)
    rebuilt = WordPool(analyzer)
    await rebuilt.add_text("古い話題のカメラ")
    await rebuilt.reseed(texts)
    assert rebuilt.snapshot() == live.snapshot()
    assert len(rebuilt) == POOL_SIZE


async def test_pool_after_restart_equals_pool_before(
    analyzer: JapaneseAnalyzer, db: Database
) -> None:
    live = WordPool(analyzer)
    for i in range(260):
        role = "user" if i % 2 else "assistant"
        text = chat_line(i)
        await add_message(db, text, role=role, archived=i < 100)
        await live.add_text(text)
    await add_message(db, "システムの指示: 英語で答える", role="system")

    texts = await load_recent_texts(db)
    assert len(texts) == 200
    assert texts[-1] == chat_line(259)
    assert texts[0] == chat_line(60)

    restarted = WordPool(analyzer)
    await restarted.reseed(texts)
    assert restarted.snapshot() == live.snapshot()


async def test_load_recent_texts_order_roles_and_archived(db: Database) -> None:
    await add_message(db, "一番目", archived=True)
    await add_message(db, "指示", role="system")
    await add_message(db, "二番目", role="assistant")
    await add_message(db, "三番目")
    assert await load_recent_texts(db, limit=10) == ["一番目", "二番目", "三番目"]
    assert await load_recent_texts(db, limit=2) == ["二番目", "三番目"]
    assert await load_recent_texts(db, limit=0) == []


async def test_pick_respects_exclusions(analyzer: JapaneseAnalyzer) -> None:
    pool = WordPool(analyzer)
    assert pool.pick(random.Random(1)) is None
    await pool.add_text("猫とカメラと写真")
    rng = random.Random(7)
    picks = {pool.pick(rng, exclude={"猫"}) for _ in range(50)}
    assert picks == {"カメラ", "写真"}
    assert pool.pick(rng, exclude={"猫", "カメラ", "写真"}) is None
    assert pool.pick(random.Random(3)) == pool.pick(random.Random(3))


async def test_pick_exclusion_ignores_case(analyzer: JapaneseAnalyzer) -> None:
    pool = WordPool(analyzer)
    await pool.add_text("Python and Kubernetes")
    assert pool.pick(random.Random(0), exclude={"python"}) == "Kubernetes"
