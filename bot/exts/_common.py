"""Helpers shared by the slash-command extensions (not an extension itself)."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Awaitable
from dataclasses import dataclass

import discord
from discord.ext import commands

from bot.bot import BotDeps, PlayChatBot
from bot.errors import UserFacingError
from bot.prompts.ui_text import UiText, ui_text
from bot.store.repos.sessions import Session
from bot.store.spaces import conversation_space

log = logging.getLogger(__name__)

# Discord wants an answer within 3 s; past this, show "thinking…" first and answer after.
DEFER_AFTER = 2.0


@dataclass(frozen=True)
class Reply:
    """What a command answers: text and optionally one file."""

    content: str
    filename: str | None = None
    data: bytes | None = None

    def file(self) -> discord.File | None:
        """The attachment as a discord.File (a fresh one per send)."""
        if self.filename is None or self.data is None:
            return None
        return discord.File(io.BytesIO(self.data), filename=self.filename)


def deps_of(bot: commands.Bot) -> BotDeps:
    """The dependencies of a PlayChatBot (extensions load only into one)."""
    if not isinstance(bot, PlayChatBot):
        raise TypeError("PlayChat extensions need a PlayChatBot")
    return bot.deps


def ui_for(deps: BotDeps) -> UiText:
    """UI texts in the configured language."""
    return ui_text(deps.services.settings().language)


async def send(interaction: discord.Interaction, reply: Reply, *, ephemeral: bool) -> None:
    """Answer the interaction: the initial response, or a followup once deferred/answered."""
    file = reply.file()
    files = [file] if file is not None else []
    if interaction.response.is_done():
        await interaction.followup.send(
            reply.content,
            ephemeral=ephemeral,
            suppress_embeds=True,
            allowed_mentions=discord.AllowedMentions.none(),
            files=files,
        )
        return
    await interaction.response.send_message(
        reply.content,
        ephemeral=ephemeral,
        suppress_embeds=True,
        allowed_mentions=discord.AllowedMentions.none(),
        files=files,
    )


async def answer(
    interaction: discord.Interaction, work: Awaitable[Reply], *, ephemeral: bool = True
) -> None:
    """Run `work`; if it is not done within DEFER_AFTER seconds, defer first, then answer."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=DEFER_AFTER)
    if not done and not interaction.response.is_done():
        await interaction.response.defer(ephemeral=ephemeral, thinking=True)
    reply = await task
    await send(interaction, reply, ephemeral=ephemeral)


def space_of_message(message: discord.Message) -> str:
    """The space a message belongs to: its server, or its author's DMs."""
    return conversation_space(
        message.guild.id if message.guild is not None else None, message.author.id
    )


def space_here(interaction: discord.Interaction) -> str:
    """The space a command was used in: its server, or the user's DMs."""
    return conversation_space(interaction.guild_id, interaction.user.id)


async def session_here(deps: BotDeps, interaction: discord.Interaction) -> Session:
    """The current session of the thread/DM the command was used in."""
    channel_id = interaction.channel_id
    session = None
    if channel_id is not None:
        session = await deps.services.conversations.current(space_here(interaction), channel_id)
    if session is None:
        raise UserFacingError(ui_for(deps).not_in_conversation)
    return session


def clip(text: str, limit: int = 1900) -> str:
    """`text` cut to fit one message, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
