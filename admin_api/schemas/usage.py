"""Token usage query and report: what each space and member used on one day."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from pydantic import BaseModel

from admin_api.schemas.common import SpaceId


class UsageQuery(BaseModel):
    """Whose usage (one space, or every space) on which day (default: today)."""

    space: SpaceId | None = None
    day: dt.date | None = None


@dataclass(frozen=True)
class MemberUsage:
    """What one member's turns used in a space that day (`reserved`: calls under way)."""

    member_id: str
    used: int
    reserved: int
    calls: int


@dataclass(frozen=True)
class SpaceUsage:
    """What a space's turns used that day in all, and per member, biggest first."""

    space_id: str
    used: int
    reserved: int
    calls: int
    members: list[MemberUsage]


@dataclass(frozen=True)
class UsageReport:
    """The day's usage with the daily budgets in effect (0: unlimited)."""

    day: str
    member_daily_tokens: int
    server_daily_tokens: int
    spaces: list[SpaceUsage]
