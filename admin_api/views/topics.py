"""Topic posts: per-channel schedules (read, update) and run-now."""

from __future__ import annotations

import dataclasses

from admin_api.context import AdminContext
from admin_api.deps import AdminDeps
from admin_api.errors import ApiError, not_found
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import (
    ChannelPath,
    TopicChannelOut,
    TopicListOut,
    TopicPostOut,
    TopicRunOut,
    TopicStatusOut,
    TopicUpdateIn,
)
from bot.topics.service import TopicService

TAG = "topics"
RECENT_POSTS = 10


def topics_of(ctx: AdminContext) -> TopicService:
    """The topic service (its routes are registered only when there is one)."""
    if ctx.deps.topics is None:  # pragma: no cover - routes absent without the service
        raise ApiError(503, "unavailable", "Topic posts are not available.")
    return ctx.deps.topics


async def list_topic_channels(call: In[Empty, Empty, Empty]) -> TopicListOut:
    """Every channel with topic settings."""
    channels = await topics_of(call.ctx).repo.channels()
    return TopicListOut(
        channels=[TopicChannelOut.model_validate(c, from_attributes=True) for c in channels]
    )


async def _status(topics: TopicService, channel_id: int) -> TopicStatusOut:
    channel, decision = await topics.status(channel_id)
    if channel is None:
        raise not_found(f"Topic settings for channel {channel_id}")
    posts = await topics.repo.recent_posts(channel_id, RECENT_POSTS)
    return TopicStatusOut(
        channel=TopicChannelOut.model_validate(channel, from_attributes=True),
        would_post=decision.post,
        reason=decision.reason,
        recent_posts=[TopicPostOut.model_validate(p, from_attributes=True) for p in posts],
    )


async def get_topic_channel(call: In[Empty, Empty, ChannelPath]) -> TopicStatusOut:
    """A channel's schedule and what an idle check would decide now."""
    return await _status(topics_of(call.ctx), call.path.channel_id)


async def update_topic_channel(call: In[TopicUpdateIn, Empty, ChannelPath]) -> TopicStatusOut:
    """Create or change a channel's schedule; the scheduler re-reads it at once."""
    topics = topics_of(call.ctx)
    try:
        await topics.configure(call.path.channel_id, call.body.changes())
    except ValueError as exc:
        raise ApiError(422, "validation_error", str(exc)) from None
    if call.ctx.deps.topics_changed is not None:
        await call.ctx.deps.topics_changed()
    return await _status(topics, call.path.channel_id)


async def run_topic_now(call: In[Empty, Empty, ChannelPath]) -> TopicRunOut:
    """Post an opener in the channel now, whatever the schedule says."""
    result = await topics_of(call.ctx).run_now(call.path.channel_id)
    return TopicRunOut(**dataclasses.asdict(result))


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Topic routes (none without a topic service)."""
    if deps.topics is None:
        return []
    return [
        Route(
            method="GET",
            path="/api/topics",
            handler=list_topic_channels,
            summary="Channels with topic settings",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=TopicListOut,
        ),
        Route(
            method="GET",
            path="/api/topics/{channel_id}",
            handler=get_topic_channel,
            summary="A channel's topic schedule and status",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=ChannelPath,
            response=TopicStatusOut,
        ),
        Route(
            method="PUT",
            path="/api/topics/{channel_id}",
            handler=update_topic_channel,
            summary="Create or change a channel's topic schedule",
            tag=TAG,
            body=TopicUpdateIn,
            query=Empty,
            params=ChannelPath,
            response=TopicStatusOut,
        ),
        Route(
            method="POST",
            path="/api/topics/{channel_id}/run",
            handler=run_topic_now,
            summary="Post a conversation opener now",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=ChannelPath,
            response=TopicRunOut,
        ),
    ]
