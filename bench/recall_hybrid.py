"""Recall with embeddings (hybrid) against lexical only: Recall@5/@10 on bench/recall.py's
generated conversations, the messages embedded through the real gateway by the background
embedder (`RecallEmbedder`) against the loopback LLM server (tests/fakes/llm_server.py).

The loopback server's embedder is a hashing bag-of-words (`hashing_embedder`): it knows no
synonyms, so this measures the plumbing (the fusion's effect on the ranking, the embedding
fill time, the search's cost with one query embedding and the cosine over the space's
vectors), not what a real embedding model would add for paraphrases.

Cost of the cosine list at size: VECTOR_SIZES random unit vectors of 768 dimensions in one
space, the space's vectors read (`MessageEmbeddingRepository.vectors`) and scored (`_top`, the
100 best), three rounds each; the median of each part reported.

Run: .venv/bin/python bench/recall_hybrid.py
Prints one JSON object, then a one-line summary. Not a timed test.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.recall import SPACE, _import
from bench.recall_data import PROBES
from bench.recall_index import fill_index
from bot.config import Settings
from bot.llm.gateway import LLMGateway, RetryPolicy
from bot.memory.recall import RecallService
from bot.memory.recall_embed import RecallEmbedder, SemanticRecall, _top
from bot.store import Repositories
from bot.store.engine.database import Database
from tests.fakes.llm_server import FakeLLMServer

EMBED = "ollama/embed-model"
VECTOR_SIZES = (2_000, 20_000)
DIMS = 768


async def _recall_at(service: RecallService, evidence: dict[int, int]) -> dict[str, Any]:
    """R@5 / R@10 of `service`'s search over the probes, and the search's p50 / p95."""
    ranks: list[int | None] = []
    took: list[float] = []
    for index, probe in enumerate(PROBES):
        started = time.perf_counter()
        page = await service.search(SPACE, probe.question, count=10)
        took.append((time.perf_counter() - started) * 1000)
        ids = [hit.id for hit in page.hits if hit.kind == "message"]
        ranks.append(ids.index(evidence[index]) + 1 if evidence[index] in ids else None)
    found = [rank for rank in ranks if rank is not None]
    took.sort()
    return {
        "recall_at_5": round(sum(1 for r in found if r <= 5) / len(PROBES), 3),
        "recall_at_10": round(len(found) / len(PROBES), 3),
        "search_p50_ms": round(statistics.median(took), 2),
        "search_p95_ms": round(took[int(len(took) * 0.95) - 1], 2),
    }


async def measure(tmp: Path) -> dict[str, Any]:
    """Lexical and hybrid quality over the same imported, indexed and embedded database."""
    async with FakeLLMServer() as server:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            llm_model="ollama/test-model",
            llm_api_base=server.url,
            embed_model=EMBED,
        )
        gateway = LLMGateway(lambda: settings, retry=RetryPolicy(attempts=1))
        db = await Database.open(tmp / "hybrid.db")
        try:
            repos = Repositories.over(db)
            evidence = await _import(db, repos)
            await fill_index(db, repos)
            started = time.perf_counter()
            embedded = await RecallEmbedder(
                gateway, repos.message_embeddings, lambda: settings
            ).backfill()
            embed_s = round(time.perf_counter() - started, 2)
            semantic = SemanticRecall(gateway, repos.message_embeddings, lambda: settings)
            lexical = await _recall_at(RecallService(repos.recall), evidence)
            hybrid = await _recall_at(RecallService(repos.recall, semantic), evidence)
        finally:
            await db.close()
            await gateway.close()
    return {
        "questions": len(PROBES),
        "messages_embedded": embedded,
        "embed_fill_s": embed_s,
        "lexical": lexical,
        "hybrid": hybrid,
    }


async def vector_cost(tmp: Path, count: int) -> dict[str, float]:
    """Median ms to read a space's `count` vectors and to score them (see the docstring)."""
    import numpy as np

    db = await Database.open(tmp / f"vectors{count}.db")
    try:
        repos = Repositories.over(db)
        await repos.spaces.ensure(SPACE)
        session = await repos.sessions.create(SPACE, title="t")
        await db.executemany(
            "INSERT INTO messages (id, space_id, session_id, role, content, created_at) "
            "VALUES (?, ?, ?, 'user', 'x', '2026-01-01')",
            [(n + 1, SPACE, session.id) for n in range(count)],
        )
        matrix = np.random.default_rng(count).standard_normal((count, DIMS)).astype("<f4")
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        await db.executemany(
            "INSERT INTO message_embeddings (space_id, message_id, model, vector, created_at) "
            "VALUES (?, ?, 'e', ?, '2026-01-01')",
            [(SPACE, n + 1, matrix[n].tobytes()) for n in range(count)],
        )
        reads, scores = [], []
        for _ in range(3):
            started = time.perf_counter()
            rows = await repos.message_embeddings.vectors(SPACE, "e")
            read = time.perf_counter()
            _top([r[0] for r in rows], [r[1] for r in rows], matrix[5].tolist(), 100)
            reads.append((read - started) * 1000)
            scores.append((time.perf_counter() - read) * 1000)
    finally:
        await db.close()
    return {
        "read_ms": round(statistics.median(reads), 1),
        "score_ms": round(statistics.median(scores), 1),
    }


async def measure_all(tmp: Path) -> dict[str, Any]:
    """Quality, then the cosine list's cost at each of VECTOR_SIZES."""
    result = await measure(tmp)
    result["vectors"] = {str(n): await vector_cost(tmp, n) for n in VECTOR_SIZES}
    return result


def main() -> None:
    """Measure and print the JSON and the summary line."""
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(measure_all(Path(tmp)))
    print(json.dumps(result))
    lex, hyb = result["lexical"], result["hybrid"]
    print(
        f"recall hybrid (loopback hashing embedder): lexical R@5 {lex['recall_at_5']} / R@10 "
        f"{lex['recall_at_10']}, hybrid R@5 {hyb['recall_at_5']} / R@10 {hyb['recall_at_10']} "
        f"over {result['questions']} questions; {result['messages_embedded']} messages embedded "
        f"in {result['embed_fill_s']} s; search p50 {lex['search_p50_ms']} → "
        f"{hyb['search_p50_ms']} ms; cosine list "
        + ", ".join(
            f"{int(n) // 1000}k vectors read {v['read_ms']} + score {v['score_ms']} ms"
            for n, v in result["vectors"].items()
        )
    )


if __name__ == "__main__":
    main()
