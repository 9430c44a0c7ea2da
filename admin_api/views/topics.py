"""Topic posts: per-channel schedules (read, update) and run-now."""

from __future__ import annotations

from admin_api.errors import ApiError, not_found
from admin_api.routing import Route
from admin_api.schemas.common import SpaceId, scope_of
from admin_api.schemas.topics import ChannelId, TopicListOut, TopicStatusOut, TopicUpdateIn
from bot.services import Services
from bot.topics.service import PostResult, TopicService

RECENT_POSTS = 10


async def _status(topics: TopicService, channel_id: int) -> TopicStatusOut:
    channel, decision = await topics.status(channel_id)
    if channel is None:
        raise not_found(f"Topic settings for channel {channel_id}")
    return TopicStatusOut(
        channel=channel,
        would_post=decision.post,
        reason=decision.reason,
        recent_posts=await topics.repo.recent_posts(channel.space_id, channel_id, RECENT_POSTS),
    )


async def list_topic_channels(services: Services, space: SpaceId | None = None) -> TopicListOut:
    """Channels with topic settings (one space's with `space`)."""
    return TopicListOut(channels=await services.topics.repo.channels(scope_of(space)))


async def get_topic_channel(services: Services, channel_id: ChannelId) -> TopicStatusOut:
    """A channel's topic schedule and what an idle check would decide now."""
    return await _status(services.topics, channel_id)


async def update_topic_channel(
    services: Services, channel_id: ChannelId, body: TopicUpdateIn
) -> TopicStatusOut:
    """Create or change a channel's topic schedule.

    A new channel goes to its server's space (`guild_id`), else the local space. The topic
    service tells its listeners (the scheduler re-reads the schedules at once).
    """
    try:
        await services.topics.configure(channel_id, body.changes())
    except ValueError as exc:
        raise ApiError(422, "validation_error", str(exc)) from None
    return await _status(services.topics, channel_id)


async def run_topic_now(services: Services, channel_id: ChannelId) -> PostResult:
    """Post a conversation opener now, whatever the schedule says."""
    return await services.topics.run_now(channel_id)


def routes() -> list[Route]:
    """Topic routes."""
    return [
        Route("GET", "/api/topics", list_topic_channels),
        Route("GET", "/api/topics/{channel_id}", get_topic_channel),
        Route("PUT", "/api/topics/{channel_id}", update_topic_channel),
        Route("POST", "/api/topics/{channel_id}/run", run_topic_now),
    ]
