"""Spaces follow the servers the bot is in: named on sight, marked left, purged when due.

A server's space is ensured with the server's name whenever the bot sees the guild (ready,
join, available, rename). Removal from a server marks its space left; coming back clears the
mark. With SPACE_RETENTION_DAYS set, a space left longer ago than that is purged (by the core's
`purge_space`) at start-up and then every PURGE_INTERVAL seconds; empty keeps it for good.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import discord
from discord.ext import commands, tasks

from bot.bot import BotDeps
from bot.exts._common import deps_of
from bot.memory.spaces import PurgeReport
from bot.store.spaces import guild_space

log = logging.getLogger(__name__)

PURGE_INTERVAL = 3600.0


class Spaces(commands.Cog):
    """Keeps the spaces table in step with the guilds the bot is in."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps

    async def cog_load(self) -> None:
        """Start the periodic purge of spaces left too long ago."""
        self.purge_loop.start()

    async def cog_unload(self) -> None:
        """Stop the periodic purge."""
        self.purge_loop.cancel()

    # Not through BackgroundTasks: a job that never ends would keep its drain() waiting.
    @tasks.loop(seconds=PURGE_INTERVAL)
    async def purge_loop(self) -> None:
        """Run the retention purge (first at start-up); a failure waits for the next round."""
        try:
            await self.purge_expired()
        except Exception:
            log.exception("purging left servers' spaces failed")

    async def purge_expired(self) -> list[PurgeReport]:
        """Purge the spaces of servers left more than SPACE_RETENTION_DAYS ago (unset: none)."""
        days = self.deps.services.settings().space_retention_days
        if days is None:
            return []
        cutoff = self.deps.now() - timedelta(days=days)
        # Each shard process purges its own servers' spaces (they may share one database).
        shards = self.deps.services.settings().shards
        reports = await self.deps.services.spaces.purge_left_before(cutoff, owned=shards.owns_space)
        for report in reports:
            log.info("purged space %s: left more than %g days ago", report.space_id, days)
        return reports

    async def _present(self, guild: discord.Guild) -> None:
        space = guild_space(guild.id)
        await self.deps.services.spaces.ensure(space, guild.name)
        # Removed while this ran (on_ready's pass over every guild takes a while): the
        # removal's mark stays. No await between this check and the queued write.
        if self.bot.get_guild(guild.id) is None:
            return
        await self.deps.services.spaces.mark_returned(space)

    @commands.Cog.listener()
    async def on_ready(self) -> None:
        """Every guild the bot is in has its named space (and is not marked left)."""
        for guild in self.bot.guilds:
            await self._present(guild)

    @commands.Cog.listener()
    async def on_guild_join(self, guild: discord.Guild) -> None:
        """Invited (again): the space exists with the server's name; a left mark is cleared."""
        await self._present(guild)

    @commands.Cog.listener()
    async def on_guild_available(self, guild: discord.Guild) -> None:
        """A guild announced on connect: same as joining."""
        await self._present(guild)

    @commands.Cog.listener()
    async def on_guild_update(self, before: discord.Guild, after: discord.Guild) -> None:
        """A renamed server renames its space."""
        if before.name != after.name:
            await self.deps.services.spaces.ensure(guild_space(after.id), after.name)

    @commands.Cog.listener()
    async def on_guild_remove(self, guild: discord.Guild) -> None:
        """Removed from a server: its space is marked left (purged later if so configured)."""
        space = guild_space(guild.id)
        await self.deps.services.spaces.ensure(space, guild.name)
        await self.deps.services.spaces.mark_left(space, self.deps.now())
        log.info("removed from server %s (%d): space %s marked left", guild.name, guild.id, space)
        await self.purge_expired()


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Spaces(bot, deps_of(bot)))
