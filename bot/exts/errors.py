"""The one error handler for slash and prefix commands: clear, short, ephemeral answers."""

from __future__ import annotations

import logging
from typing import Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import UserFacingError
from bot.exts._common import Reply, deps_of, send, ui_for

log = logging.getLogger(__name__)


def user_message(error: BaseException, generic: str) -> str | None:
    """The text to show for `error` (None: say nothing), unwrapping command wrappers."""
    original: BaseException = error
    while isinstance(original, app_commands.CommandInvokeError | commands.CommandInvokeError):
        original = original.original
    if isinstance(original, commands.CommandNotFound):
        return None
    if isinstance(original, UserFacingError):
        return str(original)
    if isinstance(original, app_commands.CheckFailure | commands.CheckFailure):
        return str(original) or generic
    if isinstance(original, app_commands.TransformerError | commands.UserInputError):
        return str(original)
    return generic


class ErrorHandler(commands.Cog):
    """Answers every command failure; unexpected ones are logged with their traceback."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps
        self._previous: Any = None

    async def cog_load(self) -> None:
        """Take over the command tree's error hook."""
        self._previous = self.bot.tree.on_error
        self.bot.tree.error(self.on_app_command_error)

    async def cog_unload(self) -> None:
        """Give the hook back."""
        if self._previous is not None:
            self.bot.tree.on_error = self._previous  # type: ignore[method-assign]

    async def on_app_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        """Slash command failures: an ephemeral sentence, never a stack trace."""
        generic = ui_for(self.deps).generic_error
        text = user_message(error, generic)
        if text == generic:
            name = interaction.command.qualified_name if interaction.command else "?"
            log.error("slash command /%s failed", name, exc_info=error)
        if text is None:
            return
        try:
            await send(interaction, Reply(text), ephemeral=True)
        except discord.HTTPException as exc:
            log.warning("could not report a command error to the user: %s", exc)

    @commands.Cog.listener()
    async def on_command_error(self, ctx: commands.Context[Any], error: Exception) -> None:
        """Prefix command failures: a short reply (unknown commands are ignored)."""
        generic = ui_for(self.deps).generic_error
        text = user_message(error, generic)
        if text == generic:
            log.error("command %s failed", ctx.command, exc_info=error)
        if text is None:
            return
        try:
            await ctx.reply(text, mention_author=False, suppress_embeds=True)
        except discord.HTTPException as exc:
            log.warning("could not report a command error to the user: %s", exc)


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(ErrorHandler(bot, deps_of(bot)))
