"""/knowledge list|read|delete|regenerate: what the bot saved from web searches."""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import NotFoundError, UserFacingError
from bot.exts._admin import require_admin
from bot.exts._common import Reply, answer, clip, deps_of, space_here, ui_for
from bot.memory.knowledge import KnowledgeEntry, RegenerateError
from bot.prompts.ui_text import UiText

LIST_LIMIT = 15


def render_entry(entry: KnowledgeEntry, ui: UiText) -> str:
    """An entry's summary and its sources (links without previews)."""
    links = "\n".join(f"- {source.title or source.url} <{source.url}>" for source in entry.sources)
    body = f"**#{entry.id} {entry.title}**\n{entry.summary.strip()}"
    return clip(f"{body}\n\n{ui.sources}:\n{links}" if links else body)


class Knowledge(
    commands.GroupCog, group_name="knowledge", group_description="Knowledge saved from searches"
):
    """List, read, delete or regenerate saved web knowledge."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps
        super().__init__()

    @app_commands.command(name="list", description="The latest saved knowledge")
    async def list_entries(self, interaction: discord.Interaction) -> None:
        """Headings of the newest entries."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            entries = await self.deps.services.knowledge.latest(space_here(interaction), LIST_LIMIT)
            if not entries:
                return Reply(ui.knowledge_empty)
            lines = [f"- #{e.id} {e.title} ({e.created_at[:10]})" for e in entries]
            return Reply(clip("\n".join([ui.knowledge_header, *lines])))

        await answer(interaction, work())

    @app_commands.command(name="read", description="Read one saved entry")
    @app_commands.describe(entry="The entry number (#id)")
    async def read(self, interaction: discord.Interaction, entry: int) -> None:
        """One entry with its sources."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            found = await self.deps.services.knowledge.get(space_here(interaction), entry)
            if found is None:
                raise NotFoundError(ui.knowledge_not_found.format(id=entry))
            return Reply(render_entry(found, ui))

        await answer(interaction, work())

    @app_commands.command(name="delete", description="Delete a saved entry (admins)")
    @app_commands.describe(entry="The entry number (#id)")
    async def delete(self, interaction: discord.Interaction, entry: int) -> None:
        """Delete an entry and its Markdown file."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            ui = ui_for(self.deps)
            if not await self.deps.services.knowledge.delete(space_here(interaction), entry):
                raise NotFoundError(ui.knowledge_not_found.format(id=entry))
            return Reply(ui.knowledge_deleted.format(id=entry))

        await answer(interaction, work())

    @app_commands.command(
        name="regenerate", description="Summarise a saved entry again from its sources (admins)"
    )
    @app_commands.describe(entry="The entry number (#id)")
    async def regenerate(self, interaction: discord.Interaction, entry: int) -> None:
        """Read an entry's sources again and replace its summary, keeping its number."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            ui = ui_for(self.deps)
            try:
                updated = await self.deps.services.knowledge.regenerate(
                    space_here(interaction), entry
                )
            except NotFoundError:
                raise NotFoundError(ui.knowledge_not_found.format(id=entry)) from None
            except RegenerateError:
                raise UserFacingError(ui.knowledge_regenerate_failed.format(id=entry)) from None
            done = ui.knowledge_regenerated.format(id=entry)
            return Reply(f"{done}\n\n{render_entry(updated, ui)}")

        await answer(interaction, work())


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Knowledge(bot, deps_of(bot)))
