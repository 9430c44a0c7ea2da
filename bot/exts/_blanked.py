"""After an erase or a forget: what the bot itself shows in Discord of the blanked texts.

The store blanked the texts; Discord still shows them in the bot's own messages (its answers
to the member, answers to others quoting them, a remembered fact's receipt) and in the names
of threads the bot opened on a member's message. The bot edits its own messages to the
placeholder and renames its own threads. Other people's messages (the member's own included)
are not the bot's to edit: they stay, and the command's reply says so.
"""

from __future__ import annotations

import logging
from typing import Final

import discord
from discord.ext import commands

from bot.memory.member_memory import DiscordFollowUp
from bot.store.erase.quotes import Quotes, quotes_of
from bot.utils.tasks import BackgroundTasks

log = logging.getLogger(__name__)

# The bot's messages looked at per channel (oldest first): bounds the REST reads of one erase.
HISTORY_LIMIT: Final = 2000
NAME_LIMIT: Final = 100


class BlankedInDiscord:
    """Edits the bot's own Discord messages and thread names after texts were blanked."""

    def __init__(self, bot: commands.Bot, tasks: BackgroundTasks) -> None:
        self._bot = bot
        self._tasks = tasks

    async def on_blanked(
        self, _space: str, _sessions: tuple[str, ...], follow: DiscordFollowUp
    ) -> None:
        """A blank listener: the Discord edits run in the background (rate limits apply)."""
        if not follow.channels and not follow.renamed:
            return
        self._tasks.spawn(self.apply(follow), name="blanked-in-discord")

    async def apply(self, follow: DiscordFollowUp) -> None:
        """Rename the bot's threads, then edit its messages that show the texts."""
        for thread_id, name in follow.renamed:
            await self._rename(thread_id, name)
        quotes = quotes_of(follow.texts)
        for channel_id in follow.channels:
            try:
                await self._edit_own(channel_id, follow, quotes)
            except discord.HTTPException as exc:
                log.warning("could not edit the bot's messages in %d: %s", channel_id, exc)

    async def _channel(self, channel_id: int) -> object:
        found = self._bot.get_channel(channel_id)
        return found if found is not None else await self._bot.fetch_channel(channel_id)

    async def _rename(self, thread_id: int, name: str) -> None:
        """Rename a thread the bot opened (others' threads are not the bot's to rename)."""
        try:
            thread = await self._channel(thread_id)
            me = self._bot.user
            if isinstance(thread, discord.Thread) and me is not None and thread.owner_id == me.id:
                await thread.edit(name=name[:NAME_LIMIT] or "…")
        except discord.HTTPException as exc:
            log.warning("could not rename thread %d: %s", thread_id, exc)

    async def _edit_own(self, channel_id: int, follow: DiscordFollowUp, quotes: Quotes) -> None:
        """Edit the bot's messages answering a blanked message or quoting a blanked text."""
        channel = await self._channel(channel_id)
        me = self._bot.user
        if not isinstance(channel, discord.abc.Messageable) or me is None:
            return
        sources = set(follow.sources)
        # A thread opened on a blanked message: the bot's first messages there answer it.
        answering = channel_id in sources
        async for message in channel.history(limit=HISTORY_LIMIT, oldest_first=True):
            if message.author.id != me.id:
                answering = message.id in sources
                continue
            if message.content == follow.placeholder:
                continue
            if answering or quotes.quoted_in(message.content):
                await message.edit(content=follow.placeholder, embeds=[])
