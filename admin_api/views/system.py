"""Operations: tag backfill, the word pool, stats."""

from __future__ import annotations

import dataclasses

from admin_api.context import AdminContext
from admin_api.deps import AdminDeps
from admin_api.errors import ApiError
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import BackfillIn, BackfillOut, StatsOut, WordPoolOut
from bot.memory.tagging import Tagger
from bot.memory.word_pool import WordPool

TAG = "system"


def tagger_of(ctx: AdminContext) -> Tagger:
    """The tagger (its route is registered only when there is one)."""
    if ctx.deps.tagger is None:  # pragma: no cover - route absent without the service
        raise ApiError(503, "unavailable", "Tagging is not available.")
    return ctx.deps.tagger


def word_pool_of(ctx: AdminContext) -> WordPool:
    """The word pool (its route is registered only when there is one)."""
    if ctx.deps.word_pool is None:  # pragma: no cover - route absent without the service
        raise ApiError(503, "unavailable", "The word pool is not available.")
    return ctx.deps.word_pool


async def backfill_tags(call: In[BackfillIn, Empty, Empty]) -> BackfillOut:
    """Tag up to `limit` untagged messages and summaries now."""
    return BackfillOut(tagged=await tagger_of(call.ctx).backfill(call.body.limit))


async def word_pool(call: In[Empty, Empty, Empty]) -> WordPoolOut:
    """The nouns the topic picker draws from."""
    return WordPoolOut(words=word_pool_of(call.ctx).snapshot())


async def stats(call: In[Empty, Empty, Empty]) -> StatsOut:
    """Counts of stored records and LLM usage totals."""
    return StatsOut(**dataclasses.asdict(await call.ctx.stats.collect()))


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """System routes (backfill and word pool only with their services)."""
    table: list[AnyRoute] = [
        Route(
            method="GET",
            path="/api/system/stats",
            handler=stats,
            summary="Counts and LLM usage totals",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=StatsOut,
        )
    ]
    if deps.tagger is not None:
        table.append(
            Route(
                method="POST",
                path="/api/system/tags/backfill",
                handler=backfill_tags,
                summary="Tag untagged messages and summaries",
                tag=TAG,
                body=BackfillIn,
                query=Empty,
                params=Empty,
                response=BackfillOut,
            )
        )
    if deps.word_pool is not None:
        table.append(
            Route(
                method="GET",
                path="/api/system/word-pool",
                handler=word_pool,
                summary="The word pool",
                tag=TAG,
                body=Empty,
                query=Empty,
                params=Empty,
                response=WordPoolOut,
            )
        )
    return table
