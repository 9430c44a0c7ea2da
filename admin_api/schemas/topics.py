"""Topic schedules: the change body and envelopes (rows: `bot.store.repos.topics` dataclasses)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from apscheduler.triggers.cron import CronTrigger
from pydantic import AfterValidator, BaseModel, Field, model_validator

from admin_api.schemas.common import Body, DiscordId, TimeZone
from admin_api.schemas.rows import TopicPostOut
from bot.prompts.languages import Language
from bot.topics.policy import parse_hhmm

ChannelId = Annotated[DiscordId, Field(ge=1)]


def _hhmm(value: str) -> str:
    try:
        parse_hhmm(value)
    except ValueError:
        raise ValueError("must be a time HH:MM") from None
    return value


def _crontab(value: str | None) -> str | None:
    if value is not None:
        try:
            CronTrigger.from_crontab(value)
        except ValueError:
            raise ValueError("must be a 5-field crontab expression") from None
    return value


HHMM = Annotated[str, Field(pattern=r"^\d{1,2}:\d{2}$"), AfterValidator(_hhmm)]
Crontab = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_crontab)]
NOT_NULL_TOPIC_FIELDS = (
    "enabled",
    "idle_minutes",
    "check_interval_minutes",
    "active_start",
    "active_end",
    "timezone",
    "max_posts_per_day",
    "persona",
)


class TopicChannelOut(BaseModel):
    """A channel's topic settings with its name and when the scheduler acts on it next.

    `channel_name` comes from the bot's channel directory (null: not seen yet);
    `next_idle_check` / `next_cron_post` are the scheduler's next run times (null: no such
    job, the channel is disabled, or the scheduler is not running).
    """

    channel_id: DiscordId
    space_id: str
    guild_id: DiscordId | None
    enabled: bool
    idle_minutes: int
    check_interval_minutes: int
    active_start: str
    active_end: str
    timezone: str
    max_posts_per_day: int
    cron: str | None
    language: str | None
    persona: str
    last_human_at: str | None
    updated_at: str
    channel_name: str | None
    next_idle_check: datetime | None
    next_cron_post: datetime | None


class AnswerRateOut(BaseModel):
    """How a channel's openers fared: `answered` of `sent` got a person's message within the
    reply window; `waiting` are still in it unanswered."""

    sent: int
    answered: int
    waiting: int


class TopicItemOut(TopicChannelOut):
    """A configured channel in the list, with its last openers (newest first) and their
    answer rate."""

    last_openers: list[TopicPostOut]
    answers: AnswerRateOut


class TopicListOut(BaseModel):
    """Every configured channel."""

    channels: list[TopicItemOut]


class TopicStatusOut(BaseModel):
    """A channel's schedule, what an idle check would decide now, and its latest posts."""

    channel: TopicChannelOut
    would_post: bool
    reason: str
    recent_posts: list[TopicPostOut]


class TopicUpdateIn(Body):
    """Changes to a channel's schedule; omitted fields stay as they are (null clears cron,
    language and guild_id)."""

    guild_id: DiscordId | None = None
    enabled: bool | None = None
    idle_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] | None = None
    check_interval_minutes: Annotated[int, Field(ge=1, le=24 * 60)] | None = None
    active_start: HHMM | None = None
    active_end: HHMM | None = None
    timezone: TimeZone | None = None
    max_posts_per_day: Annotated[int, Field(ge=0, le=100)] | None = None
    cron: Crontab | None = None
    language: Language | None = None
    persona: Annotated[str, Field(max_length=2000)] | None = None

    @model_validator(mode="after")
    def _no_null_for_required(self) -> TopicUpdateIn:
        nulls = [
            name
            for name in NOT_NULL_TOPIC_FIELDS
            if name in self.model_fields_set and getattr(self, name) is None
        ]
        if nulls:
            raise ValueError(f"cannot be null: {', '.join(nulls)}")
        return self

    def changes(self) -> dict[str, object]:
        """Only the fields the client sent."""
        return self.model_dump(exclude_unset=True)
