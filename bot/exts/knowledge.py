"""/knowledge list|read|delete: what the bot saved from web searches."""

from __future__ import annotations

from dataclasses import dataclass

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import NotFoundError
from bot.exts._admin import require_admin
from bot.exts._common import Reply, answer, clip, deps_of
from bot.memory.knowledge import KnowledgeEntry

LIST_LIMIT = 15


@dataclass(frozen=True)
class KnowledgeTexts:
    """The /knowledge command's texts in one language."""

    empty: str
    header: str
    not_found: str
    deleted: str
    sources: str


_TEXTS = {
    "en": KnowledgeTexts(
        empty="Nothing saved from web searches yet.",
        header="**Saved knowledge** (newest first)",
        not_found="No knowledge entry #{id}.",
        deleted="🗑️ Deleted knowledge entry #{id}.",
        sources="Sources",
    ),
    "ja": KnowledgeTexts(
        empty="Web 検索から保存した知識はまだありません。",
        header="**蓄積知識**（新しい順）",
        not_found="知識 #{id} はありません。",
        deleted="🗑️ 知識 #{id} を削除しました。",
        sources="出典",
    ),
}


def render_entry(entry: KnowledgeEntry, texts: KnowledgeTexts) -> str:
    """An entry's summary and its sources (links without previews)."""
    links = "\n".join(f"- {source.title or source.url} <{source.url}>" for source in entry.sources)
    body = f"**#{entry.id} {entry.title}**\n{entry.summary.strip()}"
    return clip(f"{body}\n\n{texts.sources}:\n{links}" if links else body)


class Knowledge(
    commands.GroupCog, group_name="knowledge", group_description="Knowledge saved from searches"
):
    """List, read or delete saved web knowledge."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps
        super().__init__()

    def _texts(self) -> KnowledgeTexts:
        return _TEXTS.get(self.deps.services.settings().language, _TEXTS["en"])

    @app_commands.command(name="list", description="The latest saved knowledge")
    async def list_entries(self, interaction: discord.Interaction) -> None:
        """Headings of the newest entries."""

        async def work() -> Reply:
            texts = self._texts()
            entries = await self.deps.services.knowledge.latest(LIST_LIMIT)
            if not entries:
                return Reply(texts.empty)
            lines = [f"- #{e.id} {e.title} ({e.created_at[:10]})" for e in entries]
            return Reply(clip("\n".join([texts.header, *lines])))

        await answer(interaction, work())

    @app_commands.command(name="read", description="Read one saved entry")
    @app_commands.describe(entry="The entry number (#id)")
    async def read(self, interaction: discord.Interaction, entry: int) -> None:
        """One entry with its sources."""

        async def work() -> Reply:
            texts = self._texts()
            found = await self.deps.services.knowledge.get(entry)
            if found is None:
                raise NotFoundError(texts.not_found.format(id=entry))
            return Reply(render_entry(found, texts))

        await answer(interaction, work())

    @app_commands.command(name="delete", description="Delete a saved entry (admins)")
    @app_commands.describe(entry="The entry number (#id)")
    async def delete(self, interaction: discord.Interaction, entry: int) -> None:
        """Delete an entry and its Markdown file."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            texts = self._texts()
            if not await self.deps.services.knowledge.delete(entry):
                raise NotFoundError(texts.not_found.format(id=entry))
            return Reply(texts.deleted.format(id=entry))

        await answer(interaction, work())


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Knowledge(bot, deps_of(bot)))
