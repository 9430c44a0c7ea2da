"""Usage: the tokens each space and member used on a day, against the daily budgets."""

from __future__ import annotations

from datetime import UTC, datetime

from admin_api.routing import Route
from admin_api.schemas.common import scope_of
from admin_api.schemas.usage import MemberUsage, SpaceUsage, UsageQuery, UsageReport
from bot.chat.daily_budget import budget_day
from bot.services import Services
from bot.store.repos.token_usage import DayUsage


def _spaces(rows: list[DayUsage]) -> list[SpaceUsage]:
    """Rows grouped by space: the space's own row, then its members'."""
    members: dict[str, list[MemberUsage]] = {}
    totals: dict[str, DayUsage] = {}
    for row in rows:
        if row.member_id is None:
            totals[row.space_id] = row
        else:
            members.setdefault(row.space_id, []).append(
                MemberUsage(row.member_id, row.used, row.reserved, row.calls)
            )
    return [
        SpaceUsage(total.space_id, total.used, total.reserved, total.calls, members.get(space, []))
        for space, total in sorted(totals.items(), key=lambda item: -item[1].used)
    ]


async def get_usage(services: Services, query: UsageQuery) -> UsageReport:
    """Tokens (prompt + completion) the turns used on `day`, per space and per member.

    `day` defaults to today: the space's own day when `space` is given (its time zone, else
    UTC), the UTC day for every space. `reserved` counts calls under way. The budgets are
    MEMBER_DAILY_TOKENS and SERVER_DAILY_TOKENS (0: unlimited); only a turn's own model calls
    count, not background summaries or tagging.
    """
    usage = services.repos.token_usage
    if query.day is not None:
        day = query.day.isoformat()
    else:
        zone = await usage.timezone(query.space) if query.space is not None else None
        day = budget_day(datetime.now(UTC), zone).day
    rows = await usage.on_day(scope_of(query.space), day)
    settings = services.settings()
    return UsageReport(
        day, settings.member_daily_tokens, settings.server_daily_tokens, _spaces(rows)
    )


def routes() -> list[Route]:
    """Usage routes."""
    return [Route("GET", "/api/usage", get_usage)]
