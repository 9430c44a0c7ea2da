"""/memory show|forget: the long-term memory (summaries) of this thread's conversation."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.exts._common import Reply, answer, clip, deps_of, session_here, ui_for


class Memory(commands.GroupCog, group_name="memory", group_description="This thread's memory"):
    """Show or forget the summaries the bot keeps for this thread."""

    def __init__(self, deps: BotDeps) -> None:
        self.deps = deps
        super().__init__()

    @app_commands.command(name="show", description="Show what the bot remembers of this thread")
    async def show(self, interaction: discord.Interaction) -> None:
        """The summaries in effect, oldest first."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            session = await session_here(self.deps, interaction)
            memories = await self.deps.services.repos.memories.live(session.space_id, session.id)
            if not memories:
                return Reply(ui.memory_empty)
            body = "\n\n".join(memory.summary.strip() for memory in memories)
            return Reply(clip(f"{ui.memory_header.format(count=len(memories))}\n{body}"))

        await answer(interaction, work())

    @app_commands.command(name="forget", description="Forget this thread's summaries")
    async def forget(self, interaction: discord.Interaction) -> None:
        """Delete the thread's summaries (the messages stay in the history)."""

        async def work() -> Reply:
            session = await session_here(self.deps, interaction)
            count = await self.deps.services.repos.memories.delete_for_session(
                session.space_id, session.id
            )
            return Reply(ui_for(self.deps).memory_forgotten.format(count=count))

        await answer(interaction, work())


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Memory(deps_of(bot)))
