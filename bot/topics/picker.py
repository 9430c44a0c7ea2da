"""Topic picking: a word from the pool, tags that co-occur with it, recent topics avoided."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)

RELATED_TAGS = 3
FALLBACK_TAGS = 20


class WordSource(Protocol):
    """The word pool (Janome nouns of recent messages)."""

    def pick(self, rng: random.Random, exclude: AbstractSet[str] = frozenset()) -> str | None:
        """A random word not in `exclude`, or None."""
        ...


class TagSource(Protocol):
    """Message and summary tags."""

    async def related_tags(
        self, word: str, limit: int = 5, exclude: AbstractSet[str] = frozenset()
    ) -> list[str]:
        """Tags co-occurring with `word`."""
        ...

    async def recent_tags(
        self, limit: int, channel_session_ids: Sequence[str] | None = None
    ) -> list[str]:
        """Most recently used tags."""
        ...


@dataclass(frozen=True)
class TopicChoice:
    """What to talk about: a main word and related tags."""

    topic: str
    related: tuple[str, ...]
    source: str


class TopicPicker:
    """Chooses a topic from the channel's own words."""

    def __init__(self, words: WordSource, tags: TagSource, rng: random.Random | None = None):
        self._words = words
        self._tags = tags
        self._rng = rng or random.Random()

    async def pick(self, avoid: AbstractSet[str]) -> TopicChoice | None:
        """A topic not in `avoid` (case-insensitive), or None when there is nothing to use."""
        banned = {item.casefold() for item in avoid}
        word = self._words.pick(self._rng, exclude=set(avoid))
        if word is not None and word.casefold() not in banned:
            related = await self._tags.related_tags(word, limit=RELATED_TAGS, exclude=avoid)
            return TopicChoice(word, tuple(related), "word_pool")
        candidates = [
            tag
            for tag in await self._tags.recent_tags(FALLBACK_TAGS)
            if tag.casefold() not in banned
        ]
        if not candidates:
            return None
        tag = self._rng.choice(candidates)
        related = await self._tags.related_tags(tag, limit=RELATED_TAGS, exclude=avoid)
        return TopicChoice(tag, tuple(related), "tags")
