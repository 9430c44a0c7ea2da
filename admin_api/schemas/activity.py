"""Activity report query (the report itself is `bot.store.reads.activity.Activity`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from admin_api.schemas.common import SpaceId, UtcDatetime


class ActivityQuery(BaseModel):
    """Which activity to report: a space (every space without it), a time range, a bucket size.

    The range is [since, until) in UTC; `until` defaults to now and `since` to 48 hours
    (bucket=hour) or 30 days (bucket=day) before it. A range longer than 31 days by hour or
    400 days by day is refused (422).
    """

    space: SpaceId | None = None
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None
    bucket: Literal["hour", "day"] = "hour"
