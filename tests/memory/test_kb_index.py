"""The local knowledge base's per-search state (which files each space sees, the vector matrix,
the BM25 postings, the best-k pick) follows the files: an added, changed or deleted file is
seen on the next search, in the right space only, by vectors and by BM25 alike."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.errors import LLMError
from bot.memory.japanese import InProcessAnalyzer
from bot.memory.local_kb import LocalKnowledgeBase
from bot.store.engine.database import Database
from bot.store.repos.local_kb_docs import LocalKBDocRepository
from tests.memory.test_local_kb import Conf, KeywordEmbedder, edit

A = "guild:100"
B = "guild:200"


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


@pytest.fixture(params=["embedding", "bm25"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_kb(
    root: Path, db: Database, analyzer: InProcessAnalyzer, mode: str, top_k: int = 10
) -> LocalKnowledgeBase:
    embedder = KeywordEmbedder()
    if mode == "bm25":
        embedder.error = LLMError("no embedding model")
    conf = Conf(local_kb_top_k=top_k, local_kb_min_score=0.1)
    return LocalKnowledgeBase(
        root, LocalKBDocRepository(db), embedder, analyzer, lambda: conf, rescan_interval=0.0
    )


async def paths(kb: LocalKnowledgeBase, space: str, query: str = "ラーメン") -> set[str]:
    return {hit.path for hit in await kb.search(query, space)}


async def test_added_changed_and_deleted_files_are_seen_on_the_next_search(
    tmp_path: Path, db: Database, analyzer: InProcessAnalyzer, mode: str
) -> None:
    root = tmp_path / "kb"
    shared = write(root, "ramen.md", "# ラーメン\n\n新宿のラーメン")
    write(root, "spaces/100/a.md", "# A のラーメン\n\nラーメン")
    kb = make_kb(root, db, analyzer, mode)
    assert await paths(kb, A) == {"ramen.md", "spaces/100/a.md"}
    assert await paths(kb, B) == {"ramen.md"}

    write(root, "spaces/100/new.md", "# 新しいラーメン\n\nラーメン ラーメン")
    write(root, "spaces/200/b.md", "# B のラーメン\n\nラーメン")
    assert await paths(kb, A) == {"ramen.md", "spaces/100/a.md", "spaces/100/new.md"}
    assert await paths(kb, B) == {"ramen.md", "spaces/200/b.md"}

    edit(shared, "# 猫\n\n猫の話だけ")
    assert await paths(kb, A) == {"spaces/100/a.md", "spaces/100/new.md"}
    assert await paths(kb, A, "猫") == {"ramen.md"}

    (root / "spaces/100/a.md").unlink()
    assert await paths(kb, A) == {"spaces/100/new.md"}
    assert await paths(kb, B) == {"spaces/200/b.md"}


async def test_a_space_with_no_file_of_its_own_sees_only_shared_ones_after_changes(
    tmp_path: Path, db: Database, analyzer: InProcessAnalyzer, mode: str
) -> None:
    root = tmp_path / "kb"
    write(root, "spaces/100/a.md", "# A のラーメン\n\nラーメン")
    kb = make_kb(root, db, analyzer, mode)
    assert await paths(kb, B) == set()

    write(root, "ramen.md", "# ラーメン\n\nラーメン")
    assert await paths(kb, B) == {"ramen.md"}


@pytest.mark.parametrize("top_k", [1, 2, 3, 4])
async def test_the_best_k_of_the_visible_files_best_first(
    tmp_path: Path, db: Database, analyzer: InProcessAnalyzer, mode: str, top_k: int
) -> None:
    root = tmp_path / "kb"
    for n in range(1, 4):
        write(root, f"r{n}.md", "# r\n\n" + "ラーメン " * n + "会議 " * (4 - n))
    write(root, "spaces/200/best.md", "# r\n\n" + "ラーメン " * 9)
    kb = make_kb(root, db, analyzer, mode, top_k=top_k)

    hits = await kb.search("ラーメン", A)

    assert [hit.path for hit in hits] == ["r3.md", "r2.md", "r1.md"][:top_k]
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
