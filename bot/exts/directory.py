"""The channel directory: records the names of the servers' channels as the bot sees them.

A whole server is recorded when the bot sees the guild (ready, join, available); a channel
when it is created or changed, and forgotten when deleted; a server the bot leaves loses its
channels (its space and name stay, marked left by the spaces extension). Threads are not
listed: they come and go with conversations.
"""

from __future__ import annotations

import logging

import discord
from discord.ext import commands

from bot.bot import BotDeps
from bot.exts._common import deps_of
from bot.store.repos.directory import ChannelSeen
from bot.store.spaces import guild_space

log = logging.getLogger(__name__)


def _seen(channel: discord.abc.GuildChannel) -> ChannelSeen:
    return ChannelSeen(
        channel_id=channel.id,
        name=channel.name,
        kind=str(channel.type),
        parent_id=channel.category_id,
        position=channel.position,
    )


def _visible(channel: discord.abc.GuildChannel) -> bool:
    """Whether the bot may see the channel (all of them when its own member is not cached)."""
    me = channel.guild.me
    return me is None or channel.permissions_for(me).view_channel


class Directory(commands.Cog):
    """Keeps directory_channels in step with the channels of the bot's servers."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps

    async def record_server(self, guild: discord.Guild) -> None:
        """Record every channel the bot can see in `guild`, forgetting the ones gone."""
        channels = [_seen(c) for c in guild.channels if _visible(c)]
        await self.deps.services.repos.directory.replace_server(guild_space(guild.id), channels)
        log.debug("directory: %d channels of server %d", len(channels), guild.id)

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        """Every server the bot is in, as it is now."""
        for guild in self.bot.guilds:
            await self.record_server(guild)

    @commands.Cog.listener()
    async def on_guild_join(self, guild: discord.Guild) -> None:
        """A server the bot was invited to."""
        await self.record_server(guild)

    @commands.Cog.listener()
    async def on_guild_available(self, guild: discord.Guild) -> None:
        """A server announced on (re)connect."""
        await self.record_server(guild)

    @commands.Cog.listener()
    async def on_guild_remove(self, guild: discord.Guild) -> None:
        """Removed from a server: its channels are no longer visible."""
        await self.deps.services.repos.directory.replace_server(guild_space(guild.id), [])

    @commands.Cog.listener()
    async def on_guild_channel_create(self, channel: discord.abc.GuildChannel) -> None:
        """A new channel."""
        if _visible(channel):
            await self.deps.services.repos.directory.upsert(
                guild_space(channel.guild.id), _seen(channel)
            )

    @commands.Cog.listener()
    async def on_guild_channel_update(
        self, before: discord.abc.GuildChannel, after: discord.abc.GuildChannel
    ) -> None:
        """A renamed or moved channel (or one the bot can no longer see)."""
        directory = self.deps.services.repos.directory
        space = guild_space(after.guild.id)
        if _visible(after):
            await directory.upsert(space, _seen(after))
        else:
            await directory.remove(space, after.id)

    @commands.Cog.listener()
    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        """A deleted channel."""
        await self.deps.services.repos.directory.remove(guild_space(channel.guild.id), channel.id)


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Directory(bot, deps_of(bot)))
