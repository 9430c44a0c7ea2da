"""When the bot may start a conversation: idle threshold, active hours, daily cap (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.store.repos.topics import TopicChannel


@dataclass(frozen=True)
class Decision:
    """Whether to post now, and why (logged and shown by `/topic status`)."""

    post: bool
    reason: str


def parse_hhmm(value: str) -> time:
    """'09:30' → time(9, 30); raises ValueError for anything else."""
    hours, minutes = value.strip().split(":")
    return time(int(hours), int(minutes))


def zone(name: str) -> ZoneInfo:
    """The time zone called `name`; raises ValueError when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def in_active_hours(local: time, start: time, end: time) -> bool:
    """Whether `local` is in [start, end); windows may wrap midnight; start == end: all day."""
    if start == end:
        return True
    if start < end:
        return start <= local < end
    return local >= start or local < end


def day_start_utc(now: datetime, tz: ZoneInfo) -> datetime:
    """The UTC instant of the last local midnight (the daily cap resets there)."""
    local = now.astimezone(tz)
    midnight = datetime.combine(local.date(), time(0), tzinfo=tz)
    return midnight.astimezone(UTC)


def _parse(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def idle_decision(
    channel: TopicChannel,
    now: datetime,
    *,
    last_post_at: str | None,
    posts_today: int,
) -> Decision:
    """Decide an idle-chat post: enabled, active hours, cap, and quiet since people and bot."""
    if not channel.enabled:
        return Decision(False, "topics are disabled in this channel")
    tz = zone(channel.timezone)
    local = now.astimezone(tz).time()
    if not in_active_hours(local, parse_hhmm(channel.active_start), parse_hhmm(channel.active_end)):
        return Decision(False, f"outside active hours {channel.active_start}–{channel.active_end}")
    if posts_today >= channel.max_posts_per_day:
        return Decision(False, f"daily cap of {channel.max_posts_per_day} reached")
    # Quiet means: no human message and no opener of ours within the threshold, so a
    # missed-run burst after downtime still yields one post only.
    # Settings changes count as activity too: a freshly enabled channel waits a full threshold.
    candidates = (channel.last_human_at, last_post_at, channel.updated_at)
    latest = max(moment for value in candidates if (moment := _parse(value)) is not None)
    quiet = now - latest
    if quiet < timedelta(minutes=channel.idle_minutes):
        minutes = int(quiet.total_seconds() // 60)
        return Decision(False, f"idle for {minutes} min, threshold {channel.idle_minutes} min")
    return Decision(True, "channel is idle")


def cron_decision(channel: TopicChannel, *, posts_today: int) -> Decision:
    """Decide a scheduled post: enabled and under the daily cap (the cron sets the time)."""
    if not channel.enabled:
        return Decision(False, "topics are disabled in this channel")
    if not channel.cron:
        return Decision(False, "no schedule set")
    if posts_today >= channel.max_posts_per_day:
        return Decision(False, f"daily cap of {channel.max_posts_per_day} reached")
    return Decision(True, "scheduled post")
