"""Recall with embeddings (hybrid) against lexical only: Recall@5/@10 on bench/recall.py's
generated conversations, the messages embedded through the real gateway by the background
embedder (`RecallEmbedder`) against the loopback LLM server (tests/fakes/llm_server.py).

The loopback server's embedder is a hashing bag-of-words (`hashing_embedder`): it knows no
synonyms, so this measures the plumbing (the fusion's effect on the ranking, the embedding
fill time, the search's cost with one query embedding and the cosine over the space's
vectors), not what a real embedding model would add for paraphrases.

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
from bot.memory.recall_embed import RecallEmbedder, SemanticRecall
from bot.store import Repositories
from bot.store.engine.database import Database
from tests.fakes.llm_server import FakeLLMServer

EMBED = "ollama/embed-model"


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


def main() -> None:
    """Measure and print the JSON and the summary line."""
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(measure(Path(tmp)))
    print(json.dumps(result))
    lex, hyb = result["lexical"], result["hybrid"]
    print(
        f"recall hybrid (loopback hashing embedder): lexical R@5 {lex['recall_at_5']} / R@10 "
        f"{lex['recall_at_10']}, hybrid R@5 {hyb['recall_at_5']} / R@10 {hyb['recall_at_10']} "
        f"over {result['questions']} questions; {result['messages_embedded']} messages embedded "
        f"in {result['embed_fill_s']} s; search p50 {lex['search_p50_ms']} → "
        f"{hyb['search_p50_ms']} ms"
    )


if __name__ == "__main__":
    main()
