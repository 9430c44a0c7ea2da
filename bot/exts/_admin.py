"""The admin check for commands that change settings (used inside the handlers).

Server admins act on their own server's space only (every command works on the space it runs
in); the bot's owners pass the check everywhere.
"""

from __future__ import annotations

import discord
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import UserFacingError
from bot.exts._common import ui_for
from bot.utils.access import is_admin


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
    owners = deps.services.settings().owner_user_ids
    # The bot's owners (OWNER_USER_IDS or the application owner) may administer anywhere, DMs
    # included; the application owner is asked for only when needed (a REST call).
    if not allowed and user.id not in owners and not await bot.is_owner(user):
        raise UserFacingError(ui_for(deps).admin_only)
