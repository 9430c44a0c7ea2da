"""/export: this thread's conversation as a Markdown or JSON file.

JSON is bot.store.transfer's export format (the admin API imports it back); Markdown is a readable
transcript.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.chat.attachments import human_size
from bot.errors import UserFacingError
from bot.exts._common import Reply, answer, deps_of, session_here, ui_for
from bot.prompts.ui_text import UiText
from bot.store.repos.messages import StoredMessage
from bot.store.repos.sessions import Session

MAX_EXPORT_BYTES = 8 * 1024 * 1024

Format = Literal["markdown", "json"]


def render_markdown(session: Session, messages: Sequence[StoredMessage], ui: UiText) -> str:
    """A readable transcript: title, then each message with its author and time."""
    lines = [f"# {session.title or ui.export_untitled}", ""]
    lines.append(ui.export_session_line.format(id=session.id))
    lines.append(ui.export_created_line.format(created=session.created_at))
    if session.model:
        lines.append(ui.export_model_line.format(model=session.model))
    for message in messages:
        who = message.author_name or message.role
        if message.role == "assistant":
            who = "PlayChat"
        archived = ui.export_summarised if message.archived_at else ""
        lines += ["", f"### {who} — {message.created_at}{archived}", "", message.content]
    return "\n".join(lines) + "\n"


class Export(commands.Cog):
    """Download this thread's conversation."""

    def __init__(self, deps: BotDeps) -> None:
        self.deps = deps
        self.transfer = deps.services.transfer

    @app_commands.command(name="export", description="Download this thread as Markdown or JSON")
    @app_commands.describe(format="File format")
    async def export(self, interaction: discord.Interaction, format: Format = "markdown") -> None:
        """Send the conversation as a file (only to the user who asked)."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            session = await session_here(self.deps, interaction)
            messages = await self.deps.services.repos.messages.all_for_session(
                session.space_id, session.id
            )
            if format == "json":
                exported = await self.transfer.export_session(session.space_id, session.id)
                text, suffix = exported.model_dump_json(indent=2), "json"
            else:
                text, suffix = render_markdown(session, messages, ui), "md"
            data = text.encode("utf-8")
            if len(data) > MAX_EXPORT_BYTES:
                raise UserFacingError(ui.export_too_large.format(size=human_size(len(data))))
            return Reply(
                ui.export_done.format(count=len(messages)),
                filename=f"playchat-{session.id[:8]}.{suffix}",
                data=data,
            )

        await answer(interaction, work())


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Export(deps_of(bot)))
