"""Which session a thread or DM continues: find, create (continuing a topic opener), start over."""

from __future__ import annotations

import logging

from bot.store.messages import MessageRepository
from bot.store.sessions import Session, SessionRepository
from bot.store.topics import TopicRepository

log = logging.getLogger(__name__)


class ConversationSessions:
    """Binds conversations to channels (Discord threads and DMs), without knowing Discord."""

    def __init__(
        self, sessions: SessionRepository, messages: MessageRepository, topics: TopicRepository
    ) -> None:
        self._sessions = sessions
        self._messages = messages
        self._topics = topics

    async def current(self, channel_id: int) -> Session | None:
        """The channel's current session, if it has one."""
        return await self._sessions.open_for_channel(channel_id)

    async def for_channel(
        self,
        channel_id: int,
        *,
        title: str,
        guild_id: int | None = None,
        reply_to: int | None = None,
        source: str = "discord",
    ) -> Session:
        """The channel's current session, or a new one bound to it.

        A conversation started on one of the bot's topic openers (a thread on it, or a reply
        to it: `reply_to`) continues that topic: the opener becomes its first message.
        """
        session = await self._sessions.open_for_channel(channel_id)
        if session is not None:
            return session
        candidates = [channel_id] if reply_to is None else [reply_to, channel_id]
        post = None
        for candidate in candidates:
            post = await self._topics.post_for_message(candidate)
            if post is not None:
                break
        session = await self._sessions.create(
            title=title,
            source=source,
            discord_channel_id=channel_id,
            discord_guild_id=guild_id,
            topic=None if post is None else post.topic,
        )
        if post is not None:
            await self._messages.add(session.id, "assistant", post.content)
        log.debug("channel %d: new session %s", channel_id, session.id)
        return session

    async def reset(self, session: Session) -> Session:
        """Close `session` (kept in the history) and bind a fresh one to the same channel.

        Bound right away, so a thread stays a conversation even without a mention.
        """
        await self._sessions.close(session.id)
        return await self._sessions.create(
            title=session.title,
            source=session.source,
            model=session.model,
            discord_channel_id=session.discord_channel_id,
            discord_guild_id=session.discord_guild_id,
        )

    async def pin_model(self, session: Session, model: str | None) -> None:
        """Make `session` use `model` (None: follow the default model)."""
        await self._sessions.set_model(session.id, model)
