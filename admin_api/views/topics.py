"""Topic posts: per-channel schedules (read, update) and run-now, with channel names from the
bot's channel directory and the scheduler's next run times."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from admin_api.errors import ApiError, not_found
from admin_api.routing import Route
from admin_api.schemas.common import SpaceId, scope_of
from admin_api.schemas.rows import PostResultOut, TopicPostOut
from admin_api.schemas.topics import (
    AnswerRateOut,
    ChannelId,
    TopicChannelOut,
    TopicItemOut,
    TopicListOut,
    TopicStatusOut,
    TopicUpdateIn,
)
from bot.services import Services
from bot.store.repos.topics import AnswerCounts, TopicChannel, TopicPost
from bot.store.spaces import ALL_SPACES, parse_space

RECENT_POSTS = 10
LAST_OPENERS = 3
NO_OPENERS = AnswerCounts(0, 0, 0)


def _posts(posts: list[TopicPost]) -> list[TopicPostOut]:
    return [TopicPostOut.model_validate(post) for post in posts]


def _timing(services: Services, channel: TopicChannel, name: str | None) -> dict[str, Any]:
    runs = services.topics.next_runs()
    return {
        **asdict(channel),
        "channel_name": name,
        "next_idle_check": runs.get(f"idle:{channel.channel_id}"),
        "next_cron_post": runs.get(f"cron:{channel.channel_id}"),
    }


async def _status(services: Services, channel_id: int) -> TopicStatusOut:
    topics = services.topics
    channel, decision = await topics.status(channel_id)
    if channel is None:
        raise not_found(f"Topic settings for channel {channel_id}")
    names = await services.repos.directory.names_all_spaces([channel_id])
    return TopicStatusOut(
        channel=TopicChannelOut(**_timing(services, channel, names.get(channel_id))),
        would_post=decision.post,
        reason=decision.reason,
        recent_posts=_posts(
            await topics.repo.recent_posts(channel.space_id, channel_id, RECENT_POSTS)
        ),
    )


async def list_topic_channels(services: Services, space: SpaceId | None = None) -> TopicListOut:
    """Channels with topic settings (one space's with `space`).

    Each with its name, the scheduler's next run times, its last openers and how many of its
    openers people answered.
    """
    channels = await services.topics.repo.channels(scope_of(space))
    names = await services.repos.directory.names_all_spaces(c.channel_id for c in channels)
    recent = services.topics.repo.recent_posts
    answers = await services.topics.answer_counts(scope_of(space))
    return TopicListOut(
        channels=[
            TopicItemOut(
                **_timing(services, channel, names.get(channel.channel_id)),
                last_openers=_posts(
                    await recent(channel.space_id, channel.channel_id, LAST_OPENERS)
                ),
                answers=AnswerRateOut.model_validate(
                    asdict(answers.get(channel.channel_id, NO_OPENERS))
                ),
            )
            for channel in channels
        ]
    )


async def get_topic_channel(services: Services, channel_id: ChannelId) -> TopicStatusOut:
    """A channel's topic schedule and what an idle check would decide now."""
    return await _status(services, channel_id)


async def _directory_guild(services: Services, channel_id: int) -> int | None:
    """The server of a channel the bot's directory knows."""
    for channel in await services.repos.directory.channels_by_id_all_spaces([channel_id]):
        return parse_space(channel.space_id).discord_id
    return None


async def update_topic_channel(
    services: Services, channel_id: ChannelId, body: TopicUpdateIn
) -> TopicStatusOut:
    """Create or change a channel's topic schedule.

    A new channel goes to its server's space: `guild_id`, else the server the bot's channel
    directory lists it in, else the local space. The topic service tells its listeners (the
    scheduler re-reads the schedules at once).
    """
    changes = body.changes()
    new = await services.topics.repo.get(ALL_SPACES, channel_id) is None
    if new and "guild_id" not in changes:
        known = await _directory_guild(services, channel_id)
        if known is not None:
            changes["guild_id"] = known
    try:
        await services.topics.configure(channel_id, changes)
    except ValueError as exc:
        raise ApiError(422, "validation_error", str(exc)) from None
    return await _status(services, channel_id)


async def run_topic_now(services: Services, channel_id: ChannelId) -> PostResultOut:
    """Post a conversation opener now, whatever the schedule says."""
    return PostResultOut.model_validate(await services.topics.run_now(channel_id))


def routes() -> list[Route]:
    """Topic routes."""
    return [
        Route("GET", "/api/topics", list_topic_channels),
        Route("GET", "/api/topics/{channel_id}", get_topic_channel),
        Route("PUT", "/api/topics/{channel_id}", update_topic_channel),
        Route("POST", "/api/topics/{channel_id}/run", run_topic_now),
    ]
