"""/model show|set: the model of this thread, or (outside a conversation) of this server.

`/model set` is an admin command: checked in the handler before anything changes. In a
conversation thread/DM it pins the thread's session to a preset (`default` removes the pin);
anywhere else it sets the default model of this server's space (`default` clears it: the
global setting llm_model applies again), leaving every other server alone. Only values from
the model presets are accepted. A thread's model is its pin, else its server's default, else
the global default (as the engine chooses).
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import UserFacingError
from bot.exts._admin import require_admin
from bot.exts._common import Reply, answer, deps_of, space_here, ui_for
from bot.store.repos.sessions import Session

DEFAULT_CHOICE = "default"


class Model(commands.GroupCog, group_name="model", group_description="The chat model"):
    """Show or choose the model."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps
        super().__init__()

    async def _session(self, interaction: discord.Interaction) -> Session | None:
        if interaction.channel_id is None:
            return None
        return await self.deps.services.conversations.current(
            space_here(interaction), interaction.channel_id
        )

    async def _space_default(self, space: str) -> str | None:
        record = await self.deps.services.spaces.get(space)
        return record.default_model if record is not None else None

    @app_commands.command(name="show", description="Show the model this thread uses")
    async def show(self, interaction: discord.Interaction) -> None:
        """The model that applies here and where it comes from (thread, server, global)."""

        async def work() -> Reply:
            ui = ui_for(self.deps)
            default = self.deps.services.settings().llm_model
            space_default = await self._space_default(space_here(interaction))
            session = await self._session(interaction)
            if session is not None and session.model:
                model, source = session.model, ui.model_source_thread
            elif space_default:
                model, source = space_default, ui.model_source_space
            else:
                model, source = default, ui.model_source_global
            return Reply(
                ui.model_show.format(
                    model=model,
                    source=source,
                    space_default=space_default or ui.model_none,
                    default=default,
                )
            )

        await answer(interaction, work())

    @app_commands.command(name="set", description="Choose the model (admins)")
    @app_commands.describe(value="A model preset, or 'default' to follow the default model")
    async def set_model(self, interaction: discord.Interaction, value: str) -> None:
        """Pin this thread's model, or change the default outside a conversation."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            ui = ui_for(self.deps)
            wanted = value.strip()
            services = self.deps.services
            space = space_here(interaction)
            session = await self._session(interaction)
            if wanted == DEFAULT_CHOICE:
                fallback = services.settings().llm_model
                if session is not None:
                    await services.conversations.pin_model(session, None)
                    model = await self._space_default(space) or fallback
                    return Reply(ui.model_set_thread.format(model=model))
                await services.spaces.set_default_model(space, None)
                return Reply(ui.model_space_cleared.format(model=fallback))
            presets = await services.repos.presets.list()
            if not presets:
                raise UserFacingError(ui.model_no_presets)
            if wanted not in {preset.value for preset in presets}:
                raise UserFacingError(ui.model_unknown.format(value=wanted))
            if session is not None:
                await services.conversations.pin_model(session, wanted)
                return Reply(ui.model_set_thread.format(model=wanted))
            await services.spaces.set_default_model(space, wanted)
            return Reply(ui.model_set_space.format(model=wanted))

        await answer(interaction, work())

    @set_model.autocomplete("value")
    async def value_choices(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        """Presets whose label or value contains what was typed."""
        typed = current.strip().lower()
        choices = [
            app_commands.Choice(name=f"{p.label} ({p.value})"[:100], value=p.value[:100])
            for p in await self.deps.services.repos.presets.list()
            if typed in p.label.lower() or typed in p.value.lower()
        ]
        if typed in DEFAULT_CHOICE:
            choices.append(app_commands.Choice(name=DEFAULT_CHOICE, value=DEFAULT_CHOICE))
        return choices[:25]


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Model(bot, deps_of(bot)))
