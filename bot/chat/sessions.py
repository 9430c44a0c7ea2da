"""Which session a thread or DM continues: find, create (continuing a topic opener), start over."""

from __future__ import annotations

import logging

from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import Session, SessionRepository
from bot.store.repos.topics import TopicRepository

log = logging.getLogger(__name__)


class ConversationSessions:
    """Binds conversations to channels (Discord threads and DMs) of a space, without Discord."""

    def __init__(
        self, sessions: SessionRepository, messages: MessageRepository, topics: TopicRepository
    ) -> None:
        self._sessions = sessions
        self._messages = messages
        self._topics = topics

    async def current(self, space: str, channel_id: int) -> Session | None:
        """The channel's current session in `space`, if it has one."""
        return await self._sessions.open_for_channel(space, channel_id)

    async def for_channel(
        self,
        space: str,
        channel_id: int,
        *,
        title: str,
        guild_id: int | None = None,
        parent_channel_id: int | None = None,
        reply_to: int | None = None,
        source: str = "discord",
        new_channel: bool = False,
    ) -> Session:
        """The channel's current session in `space`, or a new one bound to it.

        `parent_channel_id` is the channel a thread hangs off (its topic pool). A conversation
        started on one of the bot's topic openers (a thread on it, or a reply to it:
        `reply_to`) continues that topic: the opener becomes its first message. `new_channel`:
        the channel was made for this conversation a moment ago (a thread the bot opened on
        the user's message), so it has no session and is no opener: neither is looked up.
        """
        if not new_channel:
            session = await self._sessions.open_for_channel(space, channel_id)
            if session is not None:
                return session
        candidates = [] if reply_to is None else [reply_to]
        if not new_channel:
            candidates.append(channel_id)
        post = None
        for candidate in candidates:
            post = await self._topics.post_for_message(space, candidate)
            if post is not None:
                break
        if parent_channel_id is None and post is not None and post.channel_id != channel_id:
            parent_channel_id = post.channel_id
        session = await self._sessions.create(
            space,
            title=title,
            source=source,
            discord_channel_id=channel_id,
            discord_guild_id=guild_id,
            parent_channel_id=parent_channel_id,
            topic=None if post is None else post.topic,
        )
        if post is not None:
            await self._messages.add(space, session.id, "assistant", post.content)
        log.debug("channel %d: new session %s in %s", channel_id, session.id, space)
        return session

    async def reset(self, session: Session) -> Session:
        """Close `session` (kept in the history) and bind a fresh one to the same channel.

        Bound right away, so a thread stays a conversation even without a mention.
        """
        await self._sessions.close(session.space_id, session.id)
        return await self._sessions.create(
            session.space_id,
            title=session.title,
            source=session.source,
            model=session.model,
            discord_channel_id=session.discord_channel_id,
            discord_guild_id=session.discord_guild_id,
            parent_channel_id=session.parent_channel_id,
        )

    async def pin_model(self, session: Session, model: str | None) -> None:
        """Make `session` use `model` (None: follow the space's or the global default)."""
        await self._sessions.set_model(session.space_id, session.id, model)
