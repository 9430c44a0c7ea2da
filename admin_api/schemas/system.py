"""Operations: tag backfill and the word pool (stats are `bot.store.repos.stats.Stats`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from admin_api.schemas.common import Body, SpaceId
from admin_api.schemas.conversations import ChannelParam
from bot.store.repos.word_pool import PoolWord


class BackfillIn(Body):
    """How many untagged rows to tag at most."""

    limit: Annotated[int, Field(ge=1, le=5000)] = 500


class BackfillOut(BaseModel):
    """How many rows were tagged."""

    tagged: int


class WordPoolOut(BaseModel):
    """The most recently seen words of one space (`space_id`), or of every space (null)."""

    space_id: str | None
    words: list[str]


class ChannelWordsQuery(BaseModel):
    """One channel of a space (a Discord channel id, as digits)."""

    space: SpaceId
    channel: ChannelParam
    limit: Annotated[int, Field(ge=1, le=200)] = 50


class ChannelWordsOut(BaseModel):
    """A channel's word pool (most recently seen first, with counts) and its recent tags
    (those of the messages and summaries of its conversations, most recently used first)."""

    space_id: str
    channel_id: str
    words: list[PoolWord]
    tags: list[str]
