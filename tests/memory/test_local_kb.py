"""Local knowledge base: embedding cache by content hash, change detection, BM25 fallback."""

from __future__ import annotations

import gc
import json
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.chat.engine import TurnRequest
from bot.config import Settings
from bot.errors import LLMError
from bot.llm.gateway import LLMGateway, RetryPolicy
from bot.memory import kb_files, local_kb
from bot.memory.japanese import InProcessAnalyzer
from bot.memory.local_kb import EMBED_MAX_CHARS, LocalKnowledgeBase
from bot.services import ServiceOptions, open_services
from bot.store.engine.database import Database
from bot.store.repos.local_kb_docs import LocalKBDocRepository
from bot.turn.events import SessionEvent
from tests.collector import collector_work
from tests.fakes.llm_server import FakeLLMServer, HttpError, Text

S = "local:local"
VOCAB = ["ラーメン", "デプロイ", "猫", "沖縄", "asyncio", "会議"]

FILES = {
    "ramen.md": "# 東京のラーメン屋メモ\n\n新宿の醤油ラーメンが美味しい店。豚骨ラーメンなら池袋。"
    "行列ができるので平日の昼がおすすめ。",
    "deploy.md": "# PlayChat のデプロイ手順\n\n1. サーバーに Python 3.11 を入れる\n"
    "2. .env を作って DISCORD_TOKEN を設定する\n3. デプロイ後は systemd で常駐させる。",
    "cats.md": "猫は一日に十数時間眠る。猫のキャットフードは年齢に合わせて選ぶ。爪とぎを用意する。",
    "asyncio.md": "# Python asyncio notes\n\nThe event loop runs coroutines. Use asyncio.gather to "
    "run tasks concurrently. Never block the loop; use asyncio.to_thread.",
    "web_search/local_local/okinawa.md": "# 沖縄の観光情報\n\n沖縄の海はきれいで、"
    "夏はダイビングが人気。梅雨は五月から六月。那覇の国際通りでお土産を買える。",
}
HIDDEN = {
    ".draft.md": "# 下書き ラーメン",
    ".git/notes.md": "# git ラーメン",
    "notes.txt": "ラーメン",
    "empty.md": "  \n",
}


class KeywordEmbedder:
    """A fake embedding model: one dimension per vocabulary word; records every call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.models: list[str | None] = []
        self.error: Exception | None = None
        self.extra_dims = 0

    def vector(self, text: str) -> list[float]:
        return [float(text.count(word)) for word in VOCAB] + [0.05] + [0.0] * self.extra_dims

    async def embed(self, texts: list[str], *, model: str | None = None) -> list[list[float]]:
        self.calls.append(list(texts))
        self.models.append(model)
        if self.error is not None:
            raise self.error
        return [self.vector(text) for text in texts]

    def texts(self) -> list[str]:
        return [text for call in self.calls for text in call]


@dataclass
class Conf:
    local_kb_top_k: int = 3
    local_kb_min_score: float = 0.75
    embed_model: str = ""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


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


@pytest.fixture
def kb_dir(tmp_path: Path) -> Path:
    root = tmp_path / "knowledge_base"
    for rel, text in {**FILES, **HIDDEN}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def embedder() -> KeywordEmbedder:
    return KeywordEmbedder()


@pytest.fixture
def conf() -> Conf:
    return Conf()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kb(
    kb_dir: Path,
    db: Database,
    embedder: KeywordEmbedder,
    analyzer: InProcessAnalyzer,
    conf: Conf,
    clock: Clock,
) -> LocalKnowledgeBase:
    return LocalKnowledgeBase(
        kb_dir,
        LocalKBDocRepository(db),
        embedder,
        analyzer,
        lambda: conf,
        clock=clock,
        rescan_interval=0.0,
    )


async def rows(db: Database) -> dict[str, dict[str, object]]:
    result = await db.fetchall("SELECT * FROM local_knowledge_docs")
    return {str(row["path"]): dict(row) for row in result}


def embed_input(rel: str, text: str) -> str:
    """What the knowledge base embeds: the file, headed by its stem when it has no heading."""
    return text if text.startswith("#") else f"{Path(rel).stem}\n\n{text}"


def edit(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    stamp = path.stat().st_mtime_ns + 5_000_000_000
    os.utime(path, ns=(stamp, stamp))


async def test_first_sync_embeds_all_files_then_nothing(
    kb: LocalKnowledgeBase, db: Database, embedder: KeywordEmbedder
) -> None:
    report = await kb.sync()
    assert (report.files, report.added, report.embedded, report.embed_calls) == (5, 5, 5, 1)
    assert sorted(embedder.texts()) == sorted(embed_input(k, v) for k, v in FILES.items())
    stored = await rows(db)
    assert set(stored) == set(FILES)
    for rel, row in stored.items():
        assert json.loads(str(row["embedding_json"])) == embedder.vector(FILES[rel])
        assert row["embed_model"] == ""

    again = await kb.sync()
    assert (again.files, again.added, again.updated, again.embedded) == (5, 0, 0, 0)
    assert len(embedder.calls) == 1


async def test_restart_reuses_cached_vectors(
    kb: LocalKnowledgeBase,
    kb_dir: Path,
    db: Database,
    embedder: KeywordEmbedder,
    analyzer: InProcessAnalyzer,
    conf: Conf,
) -> None:
    await kb.sync()
    restarted = LocalKnowledgeBase(
        kb_dir, LocalKBDocRepository(db), embedder, analyzer, lambda: conf
    )
    report = await restarted.sync()
    assert (report.files, report.added, report.embedded) == (5, 0, 0)
    assert len(embedder.calls) == 1
    hits = await restarted.search("おすすめのラーメン屋はどこ？", S)
    assert [hit.path for hit in hits] == ["ramen.md"]
    assert embedder.calls[-1] == ["おすすめのラーメン屋はどこ？"]


async def test_kept_vectors_are_not_walked_by_the_garbage_collector(
    kb: LocalKnowledgeBase,
    kb_dir: Path,
    db: Database,
    embedder: KeywordEmbedder,
    analyzer: InProcessAnalyzer,
    conf: Conf,
) -> None:
    """A full collection visits every tracked container: 5,000 files' vectors as lists cost
    ~50 ms a collection (bench/context.py ×10); tuples of floats are untracked."""
    vectors = [embedder.vector(text) for text in FILES.values()]

    def tracked_vectors() -> int:
        gc.collect()
        return sum(
            1
            for item in gc.get_objects()
            if isinstance(item, list | tuple)
            and len(item) == len(vectors[0])
            and list(item) in vectors
        ) - len(vectors)  # `vectors` itself holds one list per file

    await kb.sync()
    assert await kb.search("おすすめのラーメン屋はどこ？", S)
    assert tracked_vectors() == 0
    restarted = LocalKnowledgeBase(
        kb_dir, LocalKBDocRepository(db), embedder, analyzer, lambda: conf
    )
    assert await restarted.search("おすすめのラーメン屋はどこ？", S)  # vectors from the rows
    assert tracked_vectors() == 0


@pytest.mark.parametrize("ranking", ["embedding", "bm25"])
async def test_what_a_search_keeps_adds_no_collector_work_per_file(
    tmp_path: Path,
    db: Database,
    embedder: KeywordEmbedder,
    analyzer: InProcessAnalyzer,
    conf: Conf,
    ranking: str,
) -> None:
    """The flags of what a space may see, the vector index's rows and the BM25 index live
    until the files change: as lists, Counters and lists of postings a full collection walked
    them all, per file and per word (with 50,000 files, ×100 of bench/context.py)."""
    files = 400

    def knowledge_base(folder: str, count: int) -> LocalKnowledgeBase:
        root = tmp_path / folder
        root.mkdir()
        for n in range(count):
            text = f"# 猫の話 {n}\n\n猫は一日に十数時間眠る。会議 word{n} item{n * 7}"
            (root / f"cat{n}.md").write_text(text, encoding="utf-8")
        repo = LocalKBDocRepository(db)
        return LocalKnowledgeBase(root, repo, embedder, analyzer, lambda: conf, rescan_interval=0)

    if ranking == "bm25":
        embedder.error = LLMError("no embedding model")
    # What a first search brings in, Janome's (bounded) caches of these words included.
    warm_up = knowledge_base("same", files)
    assert await warm_up.search("猫はどれくらい眠る？", S)
    assert await warm_up.search("猫の会議", "guild:7")
    kb = knowledge_base("many", files)
    await kb.sync()
    before = collector_work()

    hits = await kb.search("猫はどれくらい眠る？", S)

    assert hits and {hit.method for hit in hits} == {ranking}
    assert await kb.search("猫の会議", "guild:7"), "another space's flags"
    # Per-file work was 1,255 (vectors) and 14,838 (BM25) for 400 files; a loaded CI worker
    # adds up to ~140 objects of its own between the two counts, none of them per file.
    assert collector_work() - before < files // 2


async def test_edited_file_is_reembedded_once_and_old_vector_dropped(
    kb: LocalKnowledgeBase, kb_dir: Path, db: Database, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    before = (await rows(db))["ramen.md"]
    syncs = kb.sync_count
    new_text = "# ラーメンと猫\n\n猫カフェの隣のラーメン屋。猫が看板。"
    edit(kb_dir / "ramen.md", new_text)

    embedder.calls.clear()
    hits = await kb.search("猫カフェに行きたい", S)
    assert embedder.calls == [[new_text], ["猫カフェに行きたい"]]
    assert kb.sync_count == syncs + 1
    assert {hit.path for hit in hits} == {"ramen.md", "cats.md"}

    after = (await rows(db))["ramen.md"]
    assert after["content_hash"] != before["content_hash"]
    assert json.loads(str(after["embedding_json"])) == embedder.vector(new_text)
    old_vector = before["embedding_json"]
    assert (
        await db.scalar(
            "SELECT COUNT(*) FROM local_knowledge_docs WHERE embedding_json = ?", (old_vector,)
        )
        == 0
    )

    embedder.calls.clear()
    await kb.search("猫カフェに行きたい", S)
    assert embedder.calls == [["猫カフェに行きたい"]]
    assert kb.sync_count == syncs + 1


async def test_same_size_edit_is_seen_through_mtime(
    kb: LocalKnowledgeBase, kb_dir: Path, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    original = FILES["cats.md"]
    edit(kb_dir / "cats.md", original.replace("猫", "犬"))
    report = await kb.sync()
    assert (report.updated, report.embedded) == (1, 1)
    assert embedder.calls[-1] == [embed_input("cats.md", original.replace("猫", "犬"))]


async def test_touched_but_unchanged_file_is_not_reembedded(
    kb: LocalKnowledgeBase, kb_dir: Path, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    edit(kb_dir / "cats.md", FILES["cats.md"])
    report = await kb.sync()
    assert (report.updated, report.embedded) == (0, 0)
    assert len(embedder.calls) == 1


async def test_deleted_file_removes_its_row(
    kb: LocalKnowledgeBase, kb_dir: Path, db: Database
) -> None:
    await kb.sync()
    (kb_dir / "cats.md").unlink()
    assert await kb.search("猫のごはん", S) == []
    assert "cats.md" not in await rows(db)
    assert len(await rows(db)) == 4


async def test_a_file_gone_between_scan_and_read_is_looked_at_again_when_it_returns(
    kb: LocalKnowledgeBase, kb_dir: Path, db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    ghost = kb_dir / "ghost.md"
    text = "# 幽霊\n\n沖縄の怪談"
    ghost.write_text(text, encoding="utf-8")
    stamp = ghost.stat().st_mtime_ns
    scan = kb_files.scan_dir

    def scan_then_lose(
        root: Path, problems: dict[str, str] | None = None
    ) -> dict[str, tuple[int, int]]:
        snapshot = scan(root, problems)
        ghost.unlink(missing_ok=True)
        return snapshot

    monkeypatch.setattr(local_kb, "scan_dir", scan_then_lose)
    report = await kb.sync()
    assert report.files == len(FILES) and "ghost.md" not in await rows(db)

    monkeypatch.setattr(local_kb, "scan_dir", scan)
    ghost.write_text(text, encoding="utf-8")
    os.utime(ghost, ns=(stamp, stamp))
    await kb.search("沖縄", S)
    assert "ghost.md" in await rows(db), "same stamp as before, yet not taken as known"


async def test_renamed_file_reuses_its_vector(
    kb: LocalKnowledgeBase, kb_dir: Path, db: Database, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    (kb_dir / "pets").mkdir()
    (kb_dir / "cats.md").rename(kb_dir / "pets" / "cats.md")
    report = await kb.sync()
    assert (report.added, report.removed, report.embedded) == (1, 1, 0)
    assert len(embedder.calls) == 1
    stored = await rows(db)
    assert "pets/cats.md" in stored and "cats.md" not in stored
    assert stored["pets/cats.md"]["embedding_json"] is not None


async def test_search_finds_the_right_file_above_min_score(kb: LocalKnowledgeBase) -> None:
    hits = await kb.search("おすすめのラーメン屋はどこ？", S)
    assert len(hits) == 1
    hit = hits[0]
    assert (hit.path, hit.method, hit.title) == ("ramen.md", "embedding", "東京のラーメン屋メモ")
    assert hit.score >= 0.75
    assert hit.content == FILES["ramen.md"]

    okinawa = await kb.search("沖縄に行きたい", S)
    assert [h.path for h in okinawa] == ["web_search/local_local/okinawa.md"]
    assert await kb.search("明日の予定は？", S) == []
    assert await kb.search("   ", S) == []


async def test_title_falls_back_to_file_stem(kb: LocalKnowledgeBase) -> None:
    hits = await kb.search("猫について", S)
    assert [(h.path, h.title) for h in hits] == [("cats.md", "cats")]


async def test_search_does_not_rescan_or_reembed_when_nothing_changed(
    kb: LocalKnowledgeBase, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    syncs = kb.sync_count
    embedder.calls.clear()
    for query in ["ラーメン", "デプロイ", "猫"]:
        assert len(await kb.search(query, S)) == 1
    assert embedder.calls == [["ラーメン"], ["デプロイ"], ["猫"]]
    assert kb.sync_count == syncs


async def test_first_search_syncs_by_itself(
    kb: LocalKnowledgeBase, embedder: KeywordEmbedder
) -> None:
    hits = await kb.search("デプロイの方法", S)
    assert [h.path for h in hits] == ["deploy.md"]
    assert kb.sync_count == 1
    assert [len(call) for call in embedder.calls] == [5, 1]


async def test_embedding_failure_falls_back_to_bm25_and_logs_once(
    kb: LocalKnowledgeBase,
    db: Database,
    embedder: KeywordEmbedder,
    clock: Clock,
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedder.error = LLMError("no embedding model")
    with caplog.at_level(logging.INFO, logger="bot.memory.local_kb"):
        hits = await kb.search("PlayChatのデプロイ手順を教えて", S)
        calls_after_first = len(embedder.calls)
        ramen = await kb.search("おすすめのラーメン屋はどこ？", S)
        assert await kb.search("今日は何をしようかな", S) == []
        assert await kb.search("明日の会議の資料を作りたい", S) == []

    assert [(h.path, h.method) for h in hits] == [("deploy.md", "bm25")]
    assert hits[0].content == FILES["deploy.md"]
    assert [(h.path, h.method) for h in ramen] == [("ramen.md", "bm25")]
    assert calls_after_first == 1  # the sync tried once; the search itself did not ask again
    assert len(embedder.calls) == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert all(row["embedding_json"] is None for row in (await rows(db)).values())

    embedder.error = None
    clock.now += 301
    embedder.calls.clear()
    with caplog.at_level(logging.INFO, logger="bot.memory.local_kb"):
        recovered = await kb.search("おすすめのラーメン屋はどこ？", S)
    assert [(h.path, h.method) for h in recovered] == [("ramen.md", "embedding")]
    assert [len(call) for call in embedder.calls] == [5, 1]
    assert "available again" in caplog.text
    assert all(row["embedding_json"] is not None for row in (await rows(db)).values())


async def test_failure_during_search_falls_back_in_the_same_request(
    kb: LocalKnowledgeBase, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    embedder.error = LLMError("embedding model unloaded")
    hits = await kb.search("おすすめのラーメン屋はどこ？", S)
    assert [(h.path, h.method) for h in hits] == [("ramen.md", "bm25")]


async def test_edit_while_embeddings_are_down_drops_the_old_vector(
    kb: LocalKnowledgeBase, kb_dir: Path, db: Database, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    embedder.error = LLMError("down")
    edit(kb_dir / "ramen.md", "# 味噌ラーメン\n\n札幌の味噌ラーメン")
    report = await kb.sync()
    assert report.embedding_failed
    row = (await rows(db))["ramen.md"]
    assert row["embedding_json"] is None
    assert row["title"] == "味噌ラーメン"
    hits = await kb.search("札幌の味噌ラーメン", S)
    assert [(h.path, h.method) for h in hits] == [("ramen.md", "bm25")]


async def test_changing_the_embedding_model_reembeds(
    kb: LocalKnowledgeBase, db: Database, embedder: KeywordEmbedder, conf: Conf
) -> None:
    await kb.sync()
    conf.embed_model = "nomic-embed-text"
    embedder.calls.clear()
    hits = await kb.search("ラーメン", S)
    assert [h.path for h in hits] == ["ramen.md"]
    assert [len(call) for call in embedder.calls] == [5, 1]
    assert embedder.models[-1] == "nomic-embed-text"
    assert {row["embed_model"] for row in (await rows(db)).values()} == {"nomic-embed-text"}


async def test_a_new_vector_size_reembeds(
    kb: LocalKnowledgeBase, embedder: KeywordEmbedder
) -> None:
    await kb.sync()
    embedder.extra_dims = 4
    embedder.calls.clear()
    hits = await kb.search("ラーメン", S)
    assert [h.path for h in hits] == ["ramen.md"]
    assert [len(call) for call in embedder.calls] == [1, 5]
    embedder.calls.clear()
    await kb.search("ラーメン", S)
    assert embedder.calls == [["ラーメン"]]


async def test_top_k_and_min_score_come_from_settings(
    kb: LocalKnowledgeBase, embedder: KeywordEmbedder, conf: Conf
) -> None:
    conf.local_kb_min_score = 0.0
    assert len(await kb.search("ラーメン", S)) == 3
    conf.local_kb_top_k = 1
    assert [h.path for h in await kb.search("ラーメン", S)] == ["ramen.md"]
    conf.local_kb_top_k = 0
    calls = len(embedder.calls)
    assert await kb.search("ラーメン", S) == []
    assert len(embedder.calls) == calls


async def test_large_file_is_embedded_by_its_first_part(
    kb: LocalKnowledgeBase, kb_dir: Path, embedder: KeywordEmbedder
) -> None:
    big = "# 大きなラーメン資料\n\n" + "ラーメンの歴史。" * 3000
    (kb_dir / "big.md").write_text(big, encoding="utf-8")
    await kb.sync()
    embedded = [text for text in embedder.texts() if text.startswith("# 大きな")]
    assert [len(text) for text in embedded] == [EMBED_MAX_CHARS]
    hits = await kb.search("ラーメンの歴史", S)
    big_hit = next(h for h in hits if h.path == "big.md")
    assert big_hit.content == big


async def test_missing_directory_is_empty_not_an_error(
    tmp_path: Path, db: Database, embedder: KeywordEmbedder, analyzer: InProcessAnalyzer
) -> None:
    kb = LocalKnowledgeBase(tmp_path / "nope", LocalKBDocRepository(db), embedder, analyzer, Conf)
    assert (await kb.sync()).files == 0
    assert await kb.search("ラーメン", S) == []
    assert embedder.calls == []


async def test_undecodable_bytes_are_replaced(kb: LocalKnowledgeBase, kb_dir: Path) -> None:
    (kb_dir / "broken.md").write_bytes(b"# \xff\xfe broken\n\xe3\x81 ramen \x80")
    report = await kb.sync()
    assert report.files == 6


async def test_works_with_real_settings(
    kb_dir: Path, db: Database, embedder: KeywordEmbedder, analyzer: InProcessAnalyzer
) -> None:
    settings = Settings(_env_file=None, local_kb_top_k=2, local_kb_min_score=0.5)  # type: ignore[call-arg]
    kb = LocalKnowledgeBase(kb_dir, LocalKBDocRepository(db), embedder, analyzer, lambda: settings)
    hits = await kb.search("ラーメン", S)
    assert [h.path for h in hits] == ["ramen.md"]


async def test_through_the_gateway_and_the_loopback_llm(
    kb_dir: Path,
    db: Database,
    analyzer: InProcessAnalyzer,
    llm: FakeLLMServer,
    make_settings: Callable[..., Settings],
) -> None:
    llm.embedder = KeywordEmbedder().vector
    settings = make_settings()
    gateway = LLMGateway(lambda: settings, retry=RetryPolicy(attempts=1))
    try:
        kb = LocalKnowledgeBase(
            kb_dir, LocalKBDocRepository(db), gateway, analyzer, lambda: settings
        )
        hits = await kb.search("おすすめのラーメン屋はどこ？", S)
        assert [(h.path, h.method) for h in hits] == [("ramen.md", "embedding")]
        embeds = [r for r in llm.requests if r.path == "/api/embed"]
        assert len(embeds) == 2  # the five files in one batch, then the query

        llm.embed_error = HttpError(404, 'model "nomic-embed-text" not found, try pulling it first')
        down = LocalKnowledgeBase(
            kb_dir, LocalKBDocRepository(db), gateway, analyzer, lambda: settings
        )
        hits = await down.search("PlayChatのデプロイ手順を教えて", S)
        assert [(h.path, h.method) for h in hits] == [("deploy.md", "bm25")]
    finally:
        await gateway.close()


async def test_directory_is_rescanned_at_most_every_interval_unless_invalidated(
    kb_dir: Path,
    db: Database,
    embedder: KeywordEmbedder,
    analyzer: InProcessAnalyzer,
    conf: Conf,
    clock: Clock,
) -> None:
    kb = LocalKnowledgeBase(
        kb_dir,
        LocalKBDocRepository(db),
        embedder,
        analyzer,
        lambda: conf,
        clock=clock,
        rescan_interval=2.0,
    )
    await kb.search("ラーメン", S)
    syncs = kb.sync_count
    edit(kb_dir / "cats.md", "# 猫\n\n猫カフェのラーメン")
    await kb.search("ラーメン", S)
    assert kb.sync_count == syncs, "no scan within the interval"
    clock.now += 2.5
    await kb.search("ラーメン", S)
    assert kb.sync_count == syncs + 1, "the edit is seen once the interval has passed"
    edit(kb_dir / "cats.md", "# 猫\n\n猫カフェ")
    kb.invalidate()
    await kb.search("ラーメン", S)
    assert kb.sync_count == syncs + 2, "invalidate() forces the next search to rescan"


async def test_the_folders_own_readme_is_not_knowledge(
    tmp_path: Path, db: Database, embedder: KeywordEmbedder, analyzer: InProcessAnalyzer, conf: Conf
) -> None:
    kb_dir = tmp_path / "kb_with_readme"
    (kb_dir / "sub").mkdir(parents=True)
    (kb_dir / "README.md").write_text("# How this folder works\n", "utf-8")
    (kb_dir / "sub" / "README.md").write_text("# ラーメン\n\nA real note.\n", "utf-8")
    kb = LocalKnowledgeBase(kb_dir, LocalKBDocRepository(db), embedder, analyzer, lambda: conf)
    report = await kb.sync()
    assert report.files == 1
    assert set(await rows(db)) == {"sub/README.md"}


SPACE_FILES = {
    "ramen.md": "# 共有 ラーメン\n\nラーメンの基本。",
    "spaces/100/a.md": "# A ラーメン\n\nサーバー A だけのラーメン情報。",
    "spaces/guild_200/b.md": "# B ラーメン\n\nサーバー B だけのラーメン情報。",
    "web_search/guild_100/c.md": "# A の検索 ラーメン\n\nA で検索したラーメン。",
    "web_search/guild_200/d.md": "# B の検索 ラーメン\n\nB で検索したラーメン。",
    "web_search/loose.md": "# 置き場所のない ラーメン\n\nラーメン。",
    "spaces/e.md": "# どこでもない ラーメン\n\nラーメン。",
}


def test_visibility_rules() -> None:
    assert local_kb.visible_in("guide/x.md", "guild:1")
    assert local_kb.visible_in("spaces/1/x.md", "guild:1")
    assert local_kb.visible_in("spaces/guild_1/deep/x.md", "guild:1")
    assert local_kb.visible_in("web_search/guild_1/x.md", "guild:1")
    assert local_kb.visible_in("web_search/dm_7/x.md", "dm:7")
    assert local_kb.visible_in("spaces/local_home/x.md", "local:home")
    assert not local_kb.visible_in("spaces/7/x.md", "dm:7"), "a bare id names a server only"
    assert not local_kb.visible_in("spaces/2/x.md", "guild:1")
    assert not local_kb.visible_in("web_search/guild_2/x.md", "guild:1")
    assert not local_kb.visible_in("web_search/x.md", "guild:1")
    assert not local_kb.visible_in("spaces/x.md", "guild:1")


@pytest.mark.parametrize("mode", ["embedding", "bm25"])
async def test_a_space_sees_shared_files_and_only_its_own_folders(
    tmp_path: Path, db: Database, analyzer: InProcessAnalyzer, mode: str
) -> None:
    root = tmp_path / "spaced_kb"
    for rel, text in SPACE_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    embedder = KeywordEmbedder()
    if mode == "bm25":
        embedder.error = LLMError("no embedding model")
    conf = Conf(local_kb_top_k=10, local_kb_min_score=0.0)
    kb = LocalKnowledgeBase(
        root, LocalKBDocRepository(db), embedder, analyzer, lambda: conf, rescan_interval=0.0
    )

    async def seen(space: str) -> set[str]:
        hits = await kb.search("ラーメン", space)
        assert {hit.method for hit in hits} <= {mode}
        return {hit.path for hit in hits}

    assert await seen("guild:100") == {"ramen.md", "spaces/100/a.md", "web_search/guild_100/c.md"}
    assert await seen("guild:200") == {
        "ramen.md",
        "spaces/guild_200/b.md",
        "web_search/guild_200/d.md",
    }
    assert await seen("dm:5") == {"ramen.md"}
    assert await seen("local:local") == {"ramen.md"}


def plant_bad_files(kb_dir: Path) -> list[str]:
    """Files that each fail on their own: a name that is not UTF-8 (one in a folder named so),
    an unreadable file (unless we are root, who reads anything), a directory named *.md, a
    symlink loop named *.md. Returns the names that deserve a warning."""
    root = os.fsencode(kb_dir)
    fd = os.open(root + b"/caf\xe9.md", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, "# Café ラーメン\n\nラーメン".encode())
    os.close(fd)
    os.mkdir(root + b"/dossier\xff")
    fd = os.open(root + b"/dossier\xff/inner.md", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, "# inner ラーメン".encode())
    os.close(fd)
    (kb_dir / "folder.md").mkdir()
    (kb_dir / "loop.md").symlink_to(kb_dir / "loop.md")
    warned = ["caf\\xe9.md", "dossier\\xff"]
    if os.geteuid() != 0:
        locked = kb_dir / "locked.md"
        locked.write_text("# 鍵 ラーメン", "utf-8")
        locked.chmod(0)
        warned.append("locked.md")
    return warned


async def test_bad_files_cost_only_themselves_through_the_engine(
    make_settings: Callable[..., Settings],
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = make_settings(local_kb_min_score=0.0)
    settings.kb_dir.mkdir(parents=True)
    (settings.kb_dir / "ramen.md").write_text(FILES["ramen.md"], "utf-8")
    (settings.kb_dir / "deploy.md").write_text(FILES["deploy.md"], "utf-8")
    bad = plant_bad_files(settings.kb_dir)
    llm.embedder = KeywordEmbedder().vector
    caplog.set_level(logging.WARNING)
    async with open_services(settings, service_options) as services:
        for n in range(3):
            llm.script(Text(f"answer {n}"))
            events = [
                event
                async for event in services.engine.run_turn(
                    TurnRequest(f"ラーメン屋のおすすめは？ {n}", None, space_id=S)
                )
            ]
            assert any(isinstance(event, SessionEvent) for event in events)
            services.local_kb.invalidate()  # as if RESCAN_SECONDS had passed: scan again
        await services.tasks.drain()
    chats = llm.chat_requests
    assert len(chats) == 3
    for request in chats:
        sent = json.dumps(request.messages, ensure_ascii=False)
        assert "東京のラーメン屋メモ" in sent, "the good files still reach the model"
        assert "Café" not in sent and "鍵" not in sent and "inner" not in sent
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    about_files = [r.getMessage() for r in warnings if r.name.startswith("bot.memory")]
    assert len(about_files) == len(bad), about_files
    for name in bad:
        assert sum(name in text for text in about_files) == 1, (name, about_files)
    assert not [r for r in caplog.records if r.exc_info], "no tracebacks"


async def test_an_unreadable_file_is_skipped_warned_once_and_not_reread(
    kb: LocalKnowledgeBase,
    kb_dir: Path,
    db: Database,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    locked = kb_dir / "locked.md"
    locked.write_text("# 鍵 ラーメン", "utf-8")
    real_open = open
    opened: list[str] = []

    def refusing_open(file: Path, mode: str = "r") -> object:
        opened.append(Path(file).name)
        if Path(file).name == "locked.md":
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, mode)

    # Root reads any file whatever its mode, so the refusal is the kernel's, played here.
    monkeypatch.setattr(kb_files, "open", refusing_open, raising=False)
    caplog.set_level(logging.WARNING)
    for _ in range(3):
        hits = await kb.search("ラーメン", S)
        clock.now += 10
    assert [h.path for h in hits] == ["ramen.md"]
    assert opened.count("locked.md") == 1, "not read again while unchanged"
    assert kb.sync_count == 1, "an unreadable file does not make every scan a sync"
    warned = [r.getMessage() for r in caplog.records if "locked.md" in r.getMessage()]
    assert len(warned) == 1 and "Permission denied" in warned[0]

    edit(locked, "# 鍵 ラーメン 2")
    await kb.search("ラーメン", S)
    assert opened.count("locked.md") == 2, "read again once it changed"
    monkeypatch.undo()
    edit(locked, "# 鍵 ラーメン 3")
    await kb.search("ラーメン", S)
    assert "locked.md" in await rows(db), "readable again: back in the knowledge base"
