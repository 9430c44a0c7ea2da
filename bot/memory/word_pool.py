"""In-process pool of recently used nouns, the raw material for idle-channel topics."""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from bot.memory.japanese import NounExtractor
from bot.store.db import Database

log = logging.getLogger(__name__)

POOL_SIZE = 200
RESEED_MESSAGES = 200


class WordPool:
    """The last `maxlen` nouns seen (most recent last); not persisted, reseeded at start-up.

    Feed it the same messages `load_recent_texts` reads (user and assistant turns), so the pool
    rebuilt after a restart is the one the bot had before it.
    """

    def __init__(self, analyzer: NounExtractor, *, maxlen: int = POOL_SIZE) -> None:
        self._analyzer = analyzer
        self._words: deque[str] = deque(maxlen=maxlen)
        # Keeps additions in arrival order and stops a reseed from interleaving with them.
        self._lock = asyncio.Lock()

    async def add_text(self, text: str) -> list[str]:
        """Add the nouns of one message; returns them."""
        async with self._lock:
            nouns = await self._analyzer.nouns_async(text)
            self._words.extend(nouns)
        return nouns

    async def add_texts(self, texts: Sequence[str]) -> None:
        """Add the nouns of several messages, in order, with no other addition in between."""
        async with self._lock:
            for nouns in await self._analyzer.nouns_many(texts):
                self._words.extend(nouns)

    async def reseed(self, texts: Sequence[str]) -> None:
        """Forget everything and rebuild from `texts`, oldest first."""
        async with self._lock:
            per_text = await self._analyzer.nouns_many(texts)
            self._words.clear()
            for nouns in per_text:
                self._words.extend(nouns)
        log.debug("word pool reseeded from %d texts: %d words", len(texts), len(self._words))

    def snapshot(self) -> list[str]:
        """The pool's words, oldest first."""
        return list(self._words)

    def __len__(self) -> int:
        return len(self._words)

    def pick(self, rng: random.Random, exclude: AbstractSet[str] = frozenset()) -> str | None:
        """A random word not in `exclude` (case-insensitive); frequent words are likelier."""
        banned = {word.casefold() for word in exclude}
        candidates = [word for word in self._words if word.casefold() not in banned]
        return rng.choice(candidates) if candidates else None


async def load_recent_texts(db: Database, limit: int = RESEED_MESSAGES) -> list[str]:
    """Contents of the last `limit` user/assistant messages (archived included), oldest first."""
    if limit <= 0:
        return []
    rows = await db.fetchall(
        "SELECT content FROM ("
        " SELECT id, content FROM messages WHERE role IN ('user', 'assistant')"
        " ORDER BY id DESC LIMIT ?"
        ") ORDER BY id ASC",
        (limit,),
    )
    return [str(row["content"]) for row in rows]
