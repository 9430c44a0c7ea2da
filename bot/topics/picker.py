"""Topic picking: a word from the channel's pool, tags that co-occur with it in the channel,
recent topics avoided. Nothing of another channel or space is ever used."""

from __future__ import annotations

import logging
import random
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Protocol

log = logging.getLogger(__name__)

RELATED_TAGS = 3
FALLBACK_TAGS = 20


class WordSource(Protocol):
    """The word pool (nouns of a channel's recent messages)."""

    async def pick(
        self,
        space: str,
        channel_id: int,
        rng: random.Random,
        exclude: AbstractSet[str] = frozenset(),
    ) -> str | None:
        """A random word of the channel's pool not in `exclude`, or None."""
        ...


class TagSource(Protocol):
    """Message and summary tags of a space."""

    async def related_tags(
        self,
        space: str,
        word: str,
        limit: int = 5,
        exclude: AbstractSet[str] = frozenset(),
        *,
        channel_id: int | None = None,
    ) -> list[str]:
        """Tags co-occurring with `word` (in the channel's conversations)."""
        ...

    async def recent_tags(
        self, space: str, limit: int, *, channel_id: int | None = None
    ) -> list[str]:
        """Most recently used tags (of the channel's conversations)."""
        ...


@dataclass(frozen=True)
class TopicChoice:
    """What to talk about: a main word and related tags."""

    topic: str
    related: tuple[str, ...]
    source: str


class TopicPicker:
    """Chooses a topic from one channel's own words and tags."""

    def __init__(self, words: WordSource, tags: TagSource, rng: random.Random | None = None):
        self._words = words
        self._tags = tags
        self._rng = rng or random.Random()

    async def pick(
        self, space: str, channel_id: int, avoid: AbstractSet[str]
    ) -> TopicChoice | None:
        """A topic for the channel not in `avoid` (case-insensitive), or None when it has no
        words and no tags yet."""
        banned = {item.casefold() for item in avoid}
        word = await self._words.pick(space, channel_id, self._rng, exclude=set(avoid))
        if word is not None and word.casefold() not in banned:
            related = await self._tags.related_tags(
                space, word, limit=RELATED_TAGS, exclude=avoid, channel_id=channel_id
            )
            return TopicChoice(word, tuple(related), "word_pool")
        candidates = [
            tag
            for tag in await self._tags.recent_tags(space, FALLBACK_TAGS, channel_id=channel_id)
            if tag.casefold() not in banned
        ]
        if not candidates:
            return None
        tag = self._rng.choice(candidates)
        related = await self._tags.related_tags(
            space, tag, limit=RELATED_TAGS, exclude=avoid, channel_id=channel_id
        )
        return TopicChoice(tag, tuple(related), "tags")
