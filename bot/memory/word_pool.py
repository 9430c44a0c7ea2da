"""Each topic channel's pool of recently used nouns, the raw material for its topic openers.

Persisted per (space, channel) in `word_pool`, so the pool after a restart is exactly the one
before. Fed (by TopicService) with the human messages of channels where topics are enabled and
with the conversations of their threads; a channel's openers draw only on its own pool.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from bot.memory.japanese import NounExtractor
from bot.store.repos.word_pool import PoolWord, WordPoolRepository
from bot.store.spaces import SpaceScope

log = logging.getLogger(__name__)

POOL_SIZE = 200


class WordPool:
    """Nouns per (space, channel): the POOL_SIZE most recently seen, each with its count."""

    def __init__(
        self, analyzer: NounExtractor, repo: WordPoolRepository, *, maxlen: int = POOL_SIZE
    ) -> None:
        self._analyzer = analyzer
        self._repo = repo
        self._maxlen = maxlen

    async def add_text(
        self, space: str, channel_id: int, text: str, *, author: str | None = None
    ) -> list[str]:
        """Add the nouns of one message (by `author`, when known) to the channel's pool;
        returns them."""
        nouns = await self._analyzer.nouns_async(text)
        authored = [(noun, author) for noun in nouns] if author else []
        await self._repo.add(space, channel_id, nouns, keep=self._maxlen, authored=authored)
        return nouns

    async def add_texts(
        self,
        space: str,
        channel_id: int,
        texts: Sequence[str],
        authors: Sequence[str | None] = (),
        from_messages: Sequence[int] = (),
    ) -> None:
        """Add the nouns of several messages to the channel's pool at once; `authors[i]`
        (when given) brought `texts[i]`; none when a stored message of `from_messages` was
        erased meanwhile."""
        per_text = await self._analyzer.nouns_many(texts)
        words = [noun for nouns in per_text for noun in nouns]
        authored = [
            (noun, author)
            for nouns, author in zip(per_text, authors, strict=False)
            if author
            for noun in nouns
        ]
        await self._repo.add(
            space,
            channel_id,
            words,
            keep=self._maxlen,
            authored=authored,
            from_messages=from_messages,
        )

    async def words(self, space: str, channel_id: int) -> list[PoolWord]:
        """The channel's pool, most recently seen first."""
        return await self._repo.words(space, channel_id)

    async def snapshot(self, scope: SpaceScope, limit: int = POOL_SIZE) -> list[str]:
        """The most recently seen words of `scope` (ALL_SPACES: the operator's view)."""
        return [word.word for word in await self._repo.snapshot(scope, limit)]

    async def pick(
        self,
        space: str,
        channel_id: int,
        rng: random.Random,
        exclude: AbstractSet[str] = frozenset(),
    ) -> str | None:
        """A random word of the channel's pool not in `exclude` (case-insensitive); words seen
        more often are likelier."""
        banned = {word.casefold() for word in exclude}
        candidates = [
            word
            for word in await self._repo.words(space, channel_id)
            if word.word.casefold() not in banned
        ]
        if not candidates:
            return None
        return rng.choices(
            [word.word for word in candidates], weights=[word.count for word in candidates]
        )[0]
