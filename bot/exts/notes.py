"""/note list|read|write|append|delete|link|unlink over the shared notes service."""

from __future__ import annotations

import logging
import re

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import UserFacingError
from bot.exts._common import Reply, answer, clip, deps_of, session_here, space_here, ui_for
from bot.store.repos.notes import NotePage

log = logging.getLogger(__name__)

INLINE_NOTE_CHARS = 1800
AUTOCOMPLETE_LIMIT = 25


def _file_name(title: str) -> str:
    stem = re.sub(r"[^\w\-]+", "_", title, flags=re.UNICODE).strip("_")[:60] or "note"
    return f"{stem}.md"


def render_list(pages: list[NotePage], empty: str) -> str:
    """Titles grouped by section, cut to one message."""
    if not pages:
        return empty
    lines: list[str] = []
    section: str | None = None
    for page in pages:
        if page.section != section:
            section = page.section
            if section:
                lines.append(f"**{section}**")
        lines.append(f"• {page.title} (#{page.id})")
    return clip("\n".join(lines))


class Notes(commands.GroupCog, group_name="note", group_description="Shared notes"):
    """Read and edit the shared notes; link a note's full text into this thread."""

    def __init__(self, deps: BotDeps) -> None:
        self.deps = deps
        super().__init__()

    async def _page(self, space: str, title: str) -> NotePage:
        page = await self.deps.services.notes.find(space, title.strip())
        if page is None:
            raise UserFacingError(ui_for(self.deps).note_not_found.format(title=title))
        return page

    @app_commands.command(name="list", description="List the shared notes")
    async def list_notes(self, interaction: discord.Interaction) -> None:
        """Every note title, by section."""

        async def work() -> Reply:
            pages = list(await self.deps.services.notes.list_pages(space_here(interaction)))
            return Reply(render_list(pages, ui_for(self.deps).notes_empty))

        await answer(interaction, work())

    @app_commands.command(name="read", description="Show a note")
    @app_commands.describe(title="The note's title")
    async def read(self, interaction: discord.Interaction, title: str) -> None:
        """A note's text (as a file when it is long)."""

        async def work() -> Reply:
            page = await self._page(space_here(interaction), title)
            body = page.content or ui_for(self.deps).note_empty_body
            if len(body) <= INLINE_NOTE_CHARS:
                return Reply(f"**{page.title}**\n{body}")
            preview = clip(body, 300)
            return Reply(
                f"**{page.title}**\n{preview}",
                filename=_file_name(page.title),
                data=page.content.encode("utf-8"),
            )

        await answer(interaction, work())

    @app_commands.command(name="write", description="Create a note or replace its text")
    @app_commands.describe(
        title="The note's title", content="The new text", section="Section (new notes only)"
    )
    async def write(
        self,
        interaction: discord.Interaction,
        title: str,
        content: str,
        section: str = "",
    ) -> None:
        """Create the note, or replace the text of an existing one."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            notes = self.deps.services.notes
            space = space_here(interaction)
            page = await notes.find(space, title.strip())
            if page is None:
                created = await notes.create(space, title.strip(), content, section.strip())
                return Reply(ui.note_created.format(title=created.title))
            updated = await notes.update(space, page.id, content=content)
            return Reply(ui.note_saved.format(title=updated.title))

        await answer(interaction, work())

    @app_commands.command(name="append", description="Add text at the end of a note")
    @app_commands.describe(title="The note's title", text="Text to add")
    async def append(self, interaction: discord.Interaction, title: str, text: str) -> None:
        """Append a line to a note."""

        async def work() -> Reply:
            space = space_here(interaction)
            page = await self._page(space, title)
            updated = await self.deps.services.notes.append(space, page.id, text)
            return Reply(ui_for(self.deps).note_appended.format(title=updated.title))

        await answer(interaction, work())

    @app_commands.command(name="delete", description="Delete a note")
    @app_commands.describe(title="The note's title")
    async def delete(self, interaction: discord.Interaction, title: str) -> None:
        """Delete a note."""

        async def work() -> Reply:
            space = space_here(interaction)
            page = await self._page(space, title)
            await self.deps.services.notes.delete(space, page.id)
            return Reply(ui_for(self.deps).note_deleted.format(title=page.title))

        await answer(interaction, work())

    @app_commands.command(
        name="link", description="Put a note's full text into this thread's context"
    )
    @app_commands.describe(title="The note's title")
    async def link(self, interaction: discord.Interaction, title: str) -> None:
        """Link a note to this thread's conversation."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            session = await session_here(self.deps, interaction)
            page = await self._page(session.space_id, title)
            added = await self.deps.services.notes.link(session.space_id, session.id, page.id)
            text = ui.note_linked if added else ui.note_already_linked
            return Reply(text.format(title=page.title))

        await answer(interaction, work())

    @app_commands.command(
        name="unlink", description="Take a linked note out of this thread's context"
    )
    @app_commands.describe(title="The note's title")
    async def unlink(self, interaction: discord.Interaction, title: str) -> None:
        """Unlink a note from this thread's conversation."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            session = await session_here(self.deps, interaction)
            page = await self._page(session.space_id, title)
            removed = await self.deps.services.notes.unlink(session.space_id, session.id, page.id)
            text = ui.note_unlinked if removed else ui.note_not_linked
            return Reply(text.format(title=page.title))

        await answer(interaction, work())

    @read.autocomplete("title")
    @write.autocomplete("title")
    @append.autocomplete("title")
    @delete.autocomplete("title")
    @link.autocomplete("title")
    @unlink.autocomplete("title")
    async def title_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """Note titles starting with what was typed."""
        pages = await self.deps.services.notes.search_titles(
            space_here(interaction), current.strip(), AUTOCOMPLETE_LIMIT
        )
        return [
            app_commands.Choice(name=page.title[:100], value=page.title[:100])
            for page in pages[:AUTOCOMPLETE_LIMIT]
        ]


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Notes(deps_of(bot)))
