"""The admin check for commands that change settings (used inside the handlers)."""

from __future__ import annotations

import discord
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import UserFacingError
from bot.exts._access import is_admin
from bot.exts._common import ui_for


async def require_admin(bot: commands.Bot, deps: BotDeps, interaction: discord.Interaction) -> None:
    """Raise (a refusal the user sees) unless the user may administer the bot."""
    user = interaction.user
    role_ids = [role.id for role in user.roles] if isinstance(user, discord.Member) else []
    admin_roles = deps.services.settings().discord_admin_role_ids
    allowed = is_admin(
        manage_guild=interaction.guild is not None and interaction.permissions.manage_guild,
        role_ids=role_ids,
        admin_role_ids=admin_roles,
    )
    # The application owner may administer anywhere, DMs included (asked only when needed).
    if not allowed and not await bot.is_owner(user):
        raise UserFacingError(ui_for(deps).admin_only)
