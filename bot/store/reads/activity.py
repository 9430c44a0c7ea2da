"""Usage over time for the cockpit: turns, tokens, errors, model latency, tool use, per space.

Sources: answers (`messages` with role 'assistant') count turns; `api_logs` gives LLM calls,
tokens, errors and latency (MCP rows, purpose 'mcp', are tool traffic and left out);
`tool_calls` gives tool use. Every read is bounded by a time range the caller checked
(`MAX_RANGE`), and filtered by space unless the operator asks for all.

Times are the stored UTC ISO-8601 text, so a range is a text comparison on an index and a
bucket is a prefix of the text (hour: `YYYY-MM-DDTHH`, day: `YYYY-MM-DD`). Percentiles use
the nearest-rank method over the calls in range: p50 is the smallest latency with at least half
of the calls at or below it (1 call: that call; 2 calls: the faster; 20 calls: the 10th and,
for p95, the 19th).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from bot.errors import ValidationError
from bot.store.engine.database import Database
from bot.store.spaces import SpaceScope, in_space

log = logging.getLogger(__name__)

BucketSize = Literal["hour", "day"]
STEP: Final[dict[str, timedelta]] = {"hour": timedelta(hours=1), "day": timedelta(days=1)}
# Characters of the stored time that name its bucket.
PREFIX: Final[dict[str, int]] = {"hour": 13, "day": 10}
# The longest range one report covers (so a read stays bounded).
MAX_RANGE: Final[dict[str, timedelta]] = {"hour": timedelta(days=31), "day": timedelta(days=400)}
DEFAULT_RANGE: Final[dict[str, timedelta]] = {
    "hour": timedelta(hours=48),
    "day": timedelta(days=30),
}


@dataclass
class ActivityBucket:
    """One time bucket: answers (turns), LLM calls, tokens, errors and tool calls in it."""

    start: str
    turns: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0
    tool_calls: int = 0
    tool_failures: int = 0


@dataclass(frozen=True)
class ModelLatency:
    """One model's calls in the range: latency percentiles (ms), errors and tokens."""

    model: str
    calls: int
    errors: int
    p50_ms: int
    p95_ms: int
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class ToolUse:
    """One tool's calls in the range: how many, how many failed, mean duration (ms)."""

    tool: str
    calls: int
    failures: int
    avg_ms: int | None


@dataclass
class SpaceActivity:
    """One space's totals in the range (`space_id` None: LLM calls outside any conversation)."""

    space_id: str | None
    turns: int = 0
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0
    tool_calls: int = 0
    tool_failures: int = 0


@dataclass(frozen=True)
class Activity:
    """A usage report over [since, until) in buckets of `bucket`."""

    since: str
    until: str
    bucket: BucketSize
    buckets: list[ActivityBucket]
    models: list[ModelLatency]
    tools: list[ToolUse]
    spaces: list[SpaceActivity] = field(default_factory=list)


@dataclass
class _Tally:
    """Counters a report fills: its buckets (by time prefix of `width`) and spaces."""

    width: int
    buckets: dict[str, ActivityBucket]
    spaces: dict[str | None, SpaceActivity] = field(default_factory=dict)

    def space(self, space_id: str | None) -> SpaceActivity:
        """The space's totals, started at zero."""
        return self.spaces.setdefault(space_id, SpaceActivity(space_id))


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _floor(value: datetime, bucket: BucketSize) -> datetime:
    value = value.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return value.replace(hour=0) if bucket == "day" else value


def _bucket_starts(since: datetime, until: datetime, bucket: BucketSize) -> Iterator[datetime]:
    start = _floor(since, bucket)
    while start < until:
        yield start
        start += STEP[bucket]


def activity_range(
    since: datetime | None, until: datetime | None, bucket: BucketSize, *, now: datetime
) -> tuple[datetime, datetime]:
    """The range a report covers: defaults filled in, checked against MAX_RANGE."""
    end = until or now
    start = since or end - DEFAULT_RANGE[bucket]
    if start >= end:
        raise ValidationError("`since` must be before `until`.")
    if end - start > MAX_RANGE[bucket]:
        days = MAX_RANGE[bucket].days
        raise ValidationError(
            f"A report by {bucket} covers at most {days} days; narrow `since`/`until` "
            f"or use a larger bucket."
        )
    return start, end


class ActivityRepository:
    """Aggregate reads over answers, API logs and tool calls."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def report(
        self, scope: SpaceScope, since: datetime, until: datetime, bucket: BucketSize
    ) -> Activity:
        """The activity of `scope` in [since, until) (the caller bounds the range)."""
        lo, hi = _iso(since), _iso(until)
        buckets = {
            _iso(start)[: PREFIX[bucket]]: ActivityBucket(_iso(start))
            for start in _bucket_starts(since, until, bucket)
        }
        tally = _Tally(PREFIX[bucket], buckets)
        await self._turns(scope, lo, hi, tally)
        await self._calls(scope, lo, hi, tally)
        await self._tool_counts(scope, lo, hi, tally)
        spaces = tally.spaces
        return Activity(
            since=lo,
            until=hi,
            bucket=bucket,
            buckets=list(buckets.values()),
            models=await self._models(scope, lo, hi),
            tools=await self._tools(scope, lo, hi),
            spaces=sorted(spaces.values(), key=lambda s: (s.space_id is None, s.space_id or "")),
        )

    async def _turns(self, scope: SpaceScope, lo: str, hi: str, tally: _Tally) -> None:
        where, params = in_space(scope)
        width, buckets = tally.width, tally.buckets
        rows = await self._db.fetchall(
            f"SELECT substr(created_at, 1, {width}) AS b, space_id, COUNT(*) AS n FROM messages "
            f"WHERE role = 'assistant' AND created_at >= ? AND created_at < ? AND {where} "
            "GROUP BY b, space_id",
            (lo, hi, *params),
        )
        for row in rows:
            _add(buckets, row["b"], "turns", row["n"])
            space = tally.space(row["space_id"])
            space.turns += row["n"]

    async def _calls(self, scope: SpaceScope, lo: str, hi: str, tally: _Tally) -> None:
        where, params = in_space(scope)
        width, buckets = tally.width, tally.buckets
        rows = await self._db.fetchall(
            f"SELECT substr(created_at, 1, {width}) AS b, space_id, COUNT(*) AS n, "
            "COALESCE(SUM(prompt_tokens), 0) AS pt, COALESCE(SUM(completion_tokens), 0) AS ct, "
            "COUNT(error) AS errors FROM api_logs "
            f"WHERE created_at >= ? AND created_at < ? AND purpose != 'mcp' AND {where} "
            "GROUP BY b, space_id",
            (lo, hi, *params),
        )
        for row in rows:
            for key, column in (
                ("llm_calls", "n"),
                ("prompt_tokens", "pt"),
                ("completion_tokens", "ct"),
                ("errors", "errors"),
            ):
                _add(buckets, row["b"], key, row[column])
            space = tally.space(row["space_id"])
            space.llm_calls += row["n"]
            space.prompt_tokens += int(row["pt"])
            space.completion_tokens += int(row["ct"])
            space.errors += row["errors"]

    async def _tool_counts(self, scope: SpaceScope, lo: str, hi: str, tally: _Tally) -> None:
        where, params = in_space(scope)
        width, buckets = tally.width, tally.buckets
        rows = await self._db.fetchall(
            f"SELECT substr(created_at, 1, {width}) AS b, space_id, COUNT(*) AS n, "
            "SUM(1 - ok) AS failed FROM tool_calls "
            f"WHERE created_at >= ? AND created_at < ? AND {where} GROUP BY b, space_id",
            (lo, hi, *params),
        )
        for row in rows:
            _add(buckets, row["b"], "tool_calls", row["n"])
            _add(buckets, row["b"], "tool_failures", row["failed"])
            space = tally.space(row["space_id"])
            space.tool_calls += row["n"]
            space.tool_failures += int(row["failed"])

    async def _models(self, scope: SpaceScope, lo: str, hi: str) -> list[ModelLatency]:
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            f"""
            WITH ranked AS (
                SELECT model, latency_ms, error, prompt_tokens, completion_tokens,
                       ROW_NUMBER() OVER (PARTITION BY model ORDER BY latency_ms) AS rn,
                       COUNT(*) OVER (PARTITION BY model) AS n
                FROM api_logs
                WHERE created_at >= ? AND created_at < ? AND purpose != 'mcp' AND {where}
            )
            SELECT model, MAX(n) AS calls, COUNT(error) AS errors,
                   MIN(CASE WHEN rn >= (n * 50 + 99) / 100 THEN latency_ms END) AS p50,
                   MIN(CASE WHEN rn >= (n * 95 + 99) / 100 THEN latency_ms END) AS p95,
                   COALESCE(SUM(prompt_tokens), 0) AS pt,
                   COALESCE(SUM(completion_tokens), 0) AS ct
            FROM ranked GROUP BY model ORDER BY calls DESC, model
            """,
            (lo, hi, *params),
        )
        return [
            ModelLatency(
                model=row["model"],
                calls=row["calls"],
                errors=row["errors"],
                p50_ms=row["p50"],
                p95_ms=row["p95"],
                prompt_tokens=int(row["pt"]),
                completion_tokens=int(row["ct"]),
            )
            for row in rows
        ]

    async def _tools(self, scope: SpaceScope, lo: str, hi: str) -> list[ToolUse]:
        where, params = in_space(scope)
        rows = await self._db.fetchall(
            "SELECT tool, COUNT(*) AS calls, SUM(1 - ok) AS failures, "
            "CAST(ROUND(AVG(duration_ms)) AS INTEGER) AS avg_ms FROM tool_calls "
            f"WHERE created_at >= ? AND created_at < ? AND {where} "
            "GROUP BY tool ORDER BY calls DESC, tool",
            (lo, hi, *params),
        )
        return [
            ToolUse(row["tool"], row["calls"], int(row["failures"]), row["avg_ms"]) for row in rows
        ]


def _add(buckets: dict[str, ActivityBucket], key: str, field_name: str, value: int) -> None:
    """Add to a bucket's counter (rows are read over the buckets' own range)."""
    found = buckets.get(key)
    if found is None:
        log.debug("activity row in an unlisted bucket %s", key)
        return
    setattr(found, field_name, getattr(found, field_name) + int(value or 0))
