"""When the bot may start a conversation: idle threshold and its backoff, active hours, quiet
hours, daily cap (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

from bot.config import QuietHours
from bot.store.repos.topics import TopicChannel, TopicPost
from bot.utils.zones import zone

# Doublings past this many unanswered openers change nothing (the cap holds long before).
_MAX_DOUBLINGS = 20


@dataclass(frozen=True)
class Decision:
    """Whether to post now, and why (logged and shown by `/topic status`); `due_at`: when the
    channel will have been quiet long enough, if only that holds the post back."""

    post: bool
    reason: str
    due_at: datetime | None = None


@dataclass(frozen=True)
class Restraint:
    """What else holds openers back: quiet hours in `zone` (the server's), and `unanswered`
    openers in a row, each doubling the quiet wait up to `backoff_cap_minutes`."""

    quiet_hours: QuietHours | None = None
    zone: str = "UTC"
    unanswered: int = 0
    backoff_cap_minutes: int = 24 * 60


def quiet_minutes(idle_minutes: int, unanswered: int, cap_minutes: int) -> int:
    """The quiet wait before an idle opener: `idle_minutes` doubled per unanswered opener, at
    most `cap_minutes` (but never below `idle_minutes`)."""
    doubled: int = idle_minutes << min(unanswered, _MAX_DOUBLINGS)
    return min(doubled, max(idle_minutes, cap_minutes))


def unanswered_streak(posts: Sequence[TopicPost], now: datetime, window: timedelta) -> int:
    """How many of the newest openers (`posts`, newest first) went unanswered through their
    whole reply window since the last answered one (an opener still in its window counts as
    neither)."""
    streak = 0
    for post in posts:
        if post.answered_at is not None:
            break
        if datetime.fromisoformat(post.posted_at) + window <= now:
            streak += 1
    return streak


def quiet_hours_decision(restraint: Restraint, now: datetime) -> Decision | None:
    """A refusal while `now` is in the quiet hours (in the restraint's zone), else None."""
    hours = restraint.quiet_hours
    if hours is None or not hours.covers(now.astimezone(zone(restraint.zone)).time()):
        return None
    return Decision(False, f"quiet hours {hours} ({restraint.zone})")


def parse_hhmm(value: str) -> time:
    """'09:30' → time(9, 30); raises ValueError for anything else."""
    hours, minutes = value.strip().split(":")
    return time(int(hours), int(minutes))


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
    restraint: Restraint | None = None,
) -> Decision:
    """Decide an idle-chat post: enabled, active hours, cap, quiet hours, and quiet since
    people and bot for the channel's quiet minutes (longer after unanswered openers)."""
    restraint = restraint or Restraint(zone=channel.timezone)
    if not channel.enabled:
        return Decision(False, "topics are disabled in this channel")
    tz = zone(channel.timezone)
    local = now.astimezone(tz).time()
    if not in_active_hours(local, parse_hhmm(channel.active_start), parse_hhmm(channel.active_end)):
        return Decision(False, f"outside active hours {channel.active_start}–{channel.active_end}")
    if posts_today >= channel.max_posts_per_day:
        return Decision(False, f"daily cap of {channel.max_posts_per_day} reached")
    refused = quiet_hours_decision(restraint, now)
    if refused is not None:
        return refused
    # Quiet means: no human message and no opener of ours within the threshold, so a
    # missed-run burst after downtime still yields one post only.
    # Settings changes count as activity too: a freshly enabled channel waits a full threshold.
    candidates = (channel.last_human_at, last_post_at, channel.updated_at)
    latest = max(moment for value in candidates if (moment := _parse(value)) is not None)
    wait = quiet_minutes(channel.idle_minutes, restraint.unanswered, restraint.backoff_cap_minutes)
    due = latest + timedelta(minutes=wait)
    if now < due:
        minutes = int((now - latest).total_seconds() // 60)
        backoff = ""
        if wait > channel.idle_minutes:
            backoff = f", backed off after {restraint.unanswered} unanswered"
        return Decision(False, f"idle for {minutes} min, threshold {wait} min{backoff}", due)
    return Decision(True, "channel is idle")


def cron_decision(
    channel: TopicChannel,
    *,
    posts_today: int,
    now: datetime | None = None,
    restraint: Restraint | None = None,
) -> Decision:
    """Decide a scheduled post: enabled, under the daily cap and outside the quiet hours (the
    cron sets the time)."""
    if not channel.enabled:
        return Decision(False, "topics are disabled in this channel")
    if not channel.cron:
        return Decision(False, "no schedule set")
    if posts_today >= channel.max_posts_per_day:
        return Decision(False, f"daily cap of {channel.max_posts_per_day} reached")
    if restraint is not None and now is not None:
        refused = quiet_hours_decision(restraint, now)
        if refused is not None:
            return refused
    return Decision(True, "scheduled post")
