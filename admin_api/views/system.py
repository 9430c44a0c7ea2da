"""Operations: tag backfill, the word pool, stats."""

from __future__ import annotations

from admin_api.routing import Route
from admin_api.schemas.common import SpaceId, scope_of
from admin_api.schemas.system import (
    BackfillIn,
    BackfillOut,
    ChannelWordsOut,
    ChannelWordsQuery,
    WordPoolOut,
)
from bot.services import Services
from bot.store.repos.stats import Stats
from bot.store.transfer import SQLITE_INT_MAX


async def backfill_tags(services: Services, body: BackfillIn) -> BackfillOut:
    """Tag up to `limit` untagged messages and summaries now."""
    return BackfillOut(tagged=await services.tagger.backfill(body.limit))


async def word_pool(services: Services, space: SpaceId | None = None) -> WordPoolOut:
    """The word pool the topic picker draws from (one space's with `space`, else every space's)."""
    return WordPoolOut(space_id=space, words=await services.word_pool.snapshot(scope_of(space)))


async def channel_words(services: Services, query: ChannelWordsQuery) -> ChannelWordsOut:
    """One channel's word pool (the topic picker's material) and its recent tags."""
    channel = int(query.channel)
    if channel > SQLITE_INT_MAX:  # no such channel can be stored
        return ChannelWordsOut(space_id=query.space, channel_id=query.channel, words=[], tags=[])
    words = await services.word_pool.words(query.space, channel)
    tags = await services.tagger.recent_tags(query.space, channel_id=channel, limit=query.limit)
    return ChannelWordsOut(
        space_id=query.space, channel_id=query.channel, words=words[: query.limit], tags=tags
    )


async def stats(services: Services) -> Stats:
    """Counts of stored records and LLM usage totals."""
    return await services.repos.stats.collect()


def routes() -> list[Route]:
    """System routes."""
    return [
        Route("GET", "/api/system/stats", stats),
        Route("POST", "/api/system/tags/backfill", backfill_tags),
        Route("GET", "/api/system/word-pool", word_pool),
        Route("GET", "/api/system/channel-words", channel_words),
    ]
