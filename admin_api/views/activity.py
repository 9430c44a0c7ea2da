"""Activity: turns, tokens, errors, model latency and tool use over time, per space."""

from __future__ import annotations

from datetime import UTC, datetime

from admin_api.routing import Route
from admin_api.schemas.activity import ActivityQuery
from admin_api.schemas.common import scope_of
from bot.services import Services
from bot.store.reads.activity import Activity, activity_range


async def get_activity(services: Services, query: ActivityQuery) -> Activity:
    """Usage over time: per bucket, per model, per tool and per space.

    `buckets` lists every hour or day of the range (UTC, empty ones included) with turns
    (answers), LLM calls, prompt and completion tokens, LLM errors, tool calls and failed
    tool calls. `models`: per model, calls, errors, tokens and latency p50/p95 in ms
    (nearest rank: 1 call gives its latency for both; 20 calls give the 10th and 19th
    fastest). `tools`: per tool, calls, failures and mean duration. `spaces`: the same totals
    per space (`space_id` null: LLM calls outside any conversation). MCP traffic counts as
    tool use, not as LLM calls.
    """
    since, until = activity_range(query.since, query.until, query.bucket, now=datetime.now(UTC))
    return await services.repos.activity.report(scope_of(query.space), since, until, query.bucket)


def routes() -> list[Route]:
    """Activity routes."""
    return [Route("GET", "/api/activity", get_activity)]
