"""Recall's embeddings: the background embedder of messages, and the query-time cosine list.

When an embedding model is configured (EMBED_MODEL), after every turn (a turn hook, so in
the background through the task helper) and at start-up, visible messages without a vector of
that model are embedded newest first, BATCH per gateway call, and their unit vectors stored
in their space (`message_embeddings`). A failed call is logged and left for later: nothing is
marked, so the same messages are picked again once RETRY_SECONDS have passed. A complete pass
remembers the highest message id it covered (per model, in this process), and the next pass
reads only newer messages: after the first pass, a turn's pass costs its own messages, not a
walk over the history (a message that gave no usable vector is not retried each turn either).
Without an embedding model nothing here runs and recall stays lexical.

At query time (`SemanticRecall.ranking`, used by the recall tool only) the query is embedded
once and scored against the space's own vectors (at most VECTOR_WINDOW newest; numpy, in a
worker thread when there are more than INLINE_ROWS); the best CANDIDATES message ids are the
list `bot.store.reads.recall` fuses with its lexical ones. The related-memories layer, read on
every turn, does not call this: it would add an embedding call to each turn's hot path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from bot.config import Settings
from bot.memory.vectors import normalise
from bot.runtime.blas import load_numpy
from bot.store.repos.message_embeddings import MessageEmbeddingRepository, StoredVector

log = logging.getLogger(__name__)

BATCH: Final = 32
# A message is embedded by its first EMBED_CHARS characters.
EMBED_CHARS: Final = 2000
RETRY_SECONDS: Final = 300.0
# The cosine list's length (the fusion reads this many, as the term index's WORD_CANDIDATES).
CANDIDATES: Final = 100
# Above this many vectors the scoring runs in a worker thread, off the event loop (2,000
# vectors of 768 dimensions took 8–21 ms on the 2-core VM: bench/recall_hybrid.py).
INLINE_ROWS: Final = 500


class Embedder(Protocol):
    """What the embedder needs of the LLM gateway."""

    async def embed(
        self, texts: list[str], *, model: str | None = None, purpose: str = "embed"
    ) -> list[list[float]]:
        """One vector per text."""
        ...


def configured_model(settings: Settings) -> str | None:
    """The embedding model recall uses: EMBED_MODEL when set, else none (lexical only)."""
    return settings.embed_model or None


class RecallEmbedder:
    """Fills `message_embeddings` for the configured model (see the module docstring)."""

    def __init__(
        self,
        gateway: Embedder,
        repo: MessageEmbeddingRepository,
        settings: Callable[[], Settings],
        *,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self._gateway = gateway
        self._repo = repo
        self._settings = settings
        self._retry_seconds = retry_seconds
        self._lock = asyncio.Lock()
        self._failed_at: float | None = None
        # Per model: every message up to this id has been handled by a complete pass.
        self._covered: dict[str, int] = {}

    async def embed_pending(
        self, model: str, limit: int = BATCH, *, above: int = 0, upto: int | None = None
    ) -> list[int]:
        """Embed up to `limit` pending messages with `model` (ids in (`above`, `upto`]);
        returns the ids picked, newest first. Raises what the gateway raises (nothing is
        stored then)."""
        rows = await self._repo.unembedded_all_spaces(model, limit, above=above, upto=upto)
        if not rows:
            return []
        texts = [row.content[:EMBED_CHARS] or " " for row in rows]
        vectors = await self._gateway.embed(texts, model=model, purpose="recall-embed")
        stored = [
            StoredVector(row.space_id, row.id, unit)
            for row, vector in zip(rows, vectors, strict=True)
            if (unit := normalise(vector)) is not None
        ]
        await self._repo.store(model, stored)
        return [row.id for row in rows]

    async def backfill(self) -> int:
        """Embed every pending message, batch after batch; returns how many were handled.
        Nothing without an embedding model, or within RETRY_SECONDS of a failure."""
        model = configured_model(self._settings())
        if model is None:
            return 0
        loop = asyncio.get_running_loop()
        done = 0
        async with self._lock:  # one pass at a time; a turn's waits and takes what is left
            if self._failed_at is not None and loop.time() - self._failed_at < self._retry_seconds:
                return 0
            above = self._covered.get(model, 0)
            try:
                top = upto = await self._repo.newest_id_all_spaces()
                while True:  # down the ids: a message left without a vector is not picked again
                    picked = await self.embed_pending(model, above=above, upto=upto)
                    done += len(picked)
                    if len(picked) < BATCH:
                        break
                    upto = picked[-1] - 1
            except Exception:  # a background job: logged, retried after RETRY_SECONDS
                log.warning("recall embedding with %s failed", model, exc_info=True)
                self._failed_at = loop.time()
                return done
            self._failed_at = None
            self._covered[model] = top
        if done:
            log.info("recall embeddings: %d messages embedded with %s", done, model)
        return done


def _top(ids: Sequence[int], blobs: Sequence[bytes], query: Sequence[float], k: int) -> list[int]:
    """The `k` message ids whose vectors score best against `query` (cosine of unit
    vectors), best first; vectors of another size are left out."""
    load_numpy()
    import numpy as np

    dims = len(query)
    kept = [i for i, blob in enumerate(blobs) if len(blob) == dims * 4]
    if not kept or k <= 0:
        return []
    matrix = np.frombuffer(b"".join(blobs[i] for i in kept), dtype="<f4").reshape(len(kept), dims)
    scores = matrix @ np.asarray(query, dtype=np.float32)
    best = np.argpartition(-scores, k - 1)[:k] if len(kept) > k else np.arange(len(kept))
    order = best[np.lexsort((best, -scores[best]))]
    return [ids[kept[int(i)]] for i in order]


class SemanticRecall:
    """The query-time cosine list of a space (see the module docstring)."""

    def __init__(
        self,
        gateway: Embedder,
        repo: MessageEmbeddingRepository,
        settings: Callable[[], Settings],
    ) -> None:
        self._gateway = gateway
        self._repo = repo
        self._settings = settings

    async def ranking(self, space: str, query: str, k: int = CANDIDATES) -> list[int]:
        """The space's message ids nearest to `query`, best first; [] without an embedding
        model, without vectors in the space, or when the embedding call fails (recall then
        stays lexical)."""
        model = configured_model(self._settings())
        if model is None or not query.strip() or not await self._repo.has_any(space, model):
            return []
        try:
            [vector] = await self._gateway.embed(
                [query[:EMBED_CHARS]], model=model, purpose="recall"
            )
        except Exception:
            log.warning("recall: embedding the query with %s failed", model, exc_info=True)
            return []
        unit = normalise(vector)
        if unit is None:
            return []
        rows = await self._repo.vectors(space, model)
        ids, blobs = [row[0] for row in rows], [row[1] for row in rows]
        if len(rows) > INLINE_ROWS:
            return await asyncio.to_thread(_top, ids, blobs, unit, k)
        return _top(ids, blobs, unit, k)
