"""/reset: a fresh session in this thread (the old one is kept, closed, in the history)."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.exts._common import Reply, answer, deps_of, session_here, ui_for


class Reset(commands.Cog):
    """Start over in this thread."""

    def __init__(self, deps: BotDeps) -> None:
        self.deps = deps

    @app_commands.command(name="reset", description="Start a fresh conversation in this thread")
    async def reset(self, interaction: discord.Interaction) -> None:
        """Close the thread's session and open a new one bound to the same thread."""

        async def work() -> Reply:
            old = await session_here(self.deps, interaction)
            await self.deps.services.conversations.reset(old)
            return Reply(ui_for(self.deps).reset_done)

        await answer(interaction, work(), ephemeral=False)


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Reset(deps_of(bot)))
