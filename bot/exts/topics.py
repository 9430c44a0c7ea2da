"""/topic enable|disable|status|now|schedule, and posting the openers the scheduler picks.

All /topic commands are admin commands (checked in the handler before any change). After a
change the scheduler's jobs are rebuilt from the database at once.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands
from discord.ext import commands

from bot.bot import BotDeps
from bot.errors import UserFacingError
from bot.exts._admin import require_admin
from bot.exts._common import Reply, answer, deps_of, space_here, ui_for
from bot.store.repos.topics import TopicChannel
from bot.topics.host_zone import host_timezone
from bot.topics.policy import parse_hhmm
from bot.topics.scheduler import parse_cron
from bot.topics.service import History
from bot.utils.zones import zone

log = logging.getLogger(__name__)


def _format(template: str, channel: TopicChannel, **extra: object) -> str:
    return template.format(
        channel=channel.channel_id,
        idle=channel.idle_minutes,
        interval=channel.check_interval_minutes,
        start=channel.active_start,
        end=channel.active_end,
        tz=channel.timezone,
        cap=channel.max_posts_per_day,
        cron=channel.cron or "-",
        **extra,
    )


class Topics(commands.GroupCog, group_name="topic", group_description="Conversation starters"):
    """Idle chats and periodic posts in text channels (admins)."""

    def __init__(self, bot: commands.Bot, deps: BotDeps) -> None:
        self.bot = bot
        self.deps = deps
        super().__init__()

    async def cog_load(self) -> None:
        """The topic service posts through this cog from now on."""
        self.deps.services.topics.register_poster(self)

    async def cog_unload(self) -> None:
        """Stop posting."""
        self.deps.services.topics.unregister_poster(self)

    async def post_topic(self, channel_id: int, text: str) -> int | None:
        """Post an opener (mentions disabled, previews suppressed); its message id."""
        channel = self.bot.get_channel(channel_id)
        if channel is None:
            try:
                channel = await self.bot.fetch_channel(channel_id)
            except discord.HTTPException as exc:
                log.warning("topic channel %d unavailable: %s", channel_id, exc)
                return None
        if not isinstance(channel, discord.TextChannel):
            log.warning("topic channel %d is not a text channel", channel_id)
            return None
        message = await channel.send(
            text, allowed_mentions=discord.AllowedMentions.none(), suppress_embeds=True
        )
        return message.id

    def _channel_id(self, interaction: discord.Interaction) -> int:
        if not isinstance(interaction.channel, discord.TextChannel):
            raise UserFacingError(ui_for(self.deps).topic_text_channel_only)
        return interaction.channel.id

    async def _configure(
        self,
        interaction: discord.Interaction,
        changes: dict[str, object],
        history: History | None = None,
    ) -> TopicChannel:
        channel_id = self._channel_id(interaction)
        if interaction.guild is not None:
            changes.setdefault("guild_id", interaction.guild.id)
        try:
            channel = await self.deps.services.topics.configure(
                channel_id, changes, space=space_here(interaction), history=history
            )
        except ValueError as exc:
            raise UserFacingError(ui_for(self.deps).topic_bad_value.format(detail=exc)) from exc
        return channel

    @app_commands.command(name="enable", description="Start conversations here when it is quiet")
    @app_commands.describe(
        idle_minutes="Quiet minutes before the bot starts a conversation (default 120)",
        max_per_day="At most this many openers a day (default 3)",
    )
    async def enable(
        self,
        interaction: discord.Interaction,
        idle_minutes: app_commands.Range[int, 5, 10080] | None = None,
        max_per_day: app_commands.Range[int, 1, 48] | None = None,
    ) -> None:
        """Turn topics on in this channel."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            changes: dict[str, object] = {"enabled": True}
            if idle_minutes is not None:
                changes["idle_minutes"] = idle_minutes
            if max_per_day is not None:
                changes["max_posts_per_day"] = max_per_day
            history = _human_history(interaction.channel, self.bot.user)
            channel = await self._configure(interaction, changes, history)
            return Reply(_format(ui_for(self.deps).topic_enabled, channel))

        await answer(interaction, work())

    @app_commands.command(name="disable", description="Stop starting conversations here")
    async def disable(self, interaction: discord.Interaction) -> None:
        """Turn topics off in this channel."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            channel = await self._configure(interaction, {"enabled": False})
            return Reply(_format(ui_for(self.deps).topic_disabled, channel))

        await answer(interaction, work())

    @app_commands.command(name="status", description="Topic settings of this channel")
    async def status(self, interaction: discord.Interaction) -> None:
        """Settings and what an idle check would decide now."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            ui = ui_for(self.deps)
            channel, decision = await self.deps.services.topics.status(
                self._channel_id(interaction), scope=space_here(interaction)
            )
            if channel is None:
                return Reply(ui.topic_not_configured)
            state = ui.topic_state_on if channel.enabled else ui.topic_state_off
            answers = await self.deps.services.topics.answers(channel)
            return Reply(
                _format(ui.topic_status, channel, state=state, reason=decision.reason, **answers)
            )

        await answer(interaction, work())

    @app_commands.command(name="now", description="Post a conversation opener now")
    async def now(self, interaction: discord.Interaction) -> None:
        """Post an opener right away."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            ui = ui_for(self.deps)
            result = await self.deps.services.topics.run_now(
                self._channel_id(interaction), space=space_here(interaction)
            )
            if result.posted:
                return Reply(ui.topic_posted.format(topic=result.topic))
            return Reply(ui.topic_not_posted.format(reason=result.reason))

        await answer(interaction, work())

    @app_commands.command(name="schedule", description="Periodic posts and active hours")
    @app_commands.describe(
        cron="Cron for periodic posts, e.g. '0 9 * * *' (empty: none)",
        active_start="Active from (HH:MM)",
        active_end="Active until (HH:MM)",
        timezone="Time zone, e.g. Europe/Paris (new channels: the host's time zone)",
        max_per_day="At most this many openers a day",
    )
    async def schedule(  # noqa: PLR0917 - Discord passes options as arguments
        self,
        interaction: discord.Interaction,
        cron: str | None = None,
        active_start: str | None = None,
        active_end: str | None = None,
        timezone: str | None = None,
        max_per_day: app_commands.Range[int, 1, 48] | None = None,
    ) -> None:
        """Set the cron schedule, active hours, time zone and daily cap."""
        await require_admin(self.bot, self.deps, interaction)

        async def work() -> Reply:
            ui = ui_for(self.deps)
            changes: dict[str, object] = {}
            try:
                for key, value in (("active_start", active_start), ("active_end", active_end)):
                    if value is not None:
                        parse_hhmm(value)
                        changes[key] = value.strip()
                if timezone is not None:
                    zone(timezone)
                    changes["timezone"] = timezone.strip()
                if cron is not None and cron.strip():
                    current = await self.deps.services.repos.topics.get(
                        space_here(interaction), self._channel_id(interaction)
                    )
                    tz = timezone or (current.timezone if current else host_timezone())
                    parse_cron(cron.strip(), tz)
                if cron is not None:
                    changes["cron"] = cron.strip() or None
            except ValueError as exc:
                raise UserFacingError(ui.topic_bad_value.format(detail=exc)) from exc
            if max_per_day is not None:
                changes["max_posts_per_day"] = max_per_day
            channel = await self._configure(interaction, changes)
            return Reply(ui.topic_scheduled.format(channel=channel.channel_id))

        await answer(interaction, work())


def _human_history(channel: object, me: discord.ClientUser | None) -> History | None:
    """The channel's recent human messages (newest first) through Discord's history API;
    bots' messages and those addressed to this bot (turns, not chatter) are left out."""
    if not isinstance(channel, discord.TextChannel):
        return None

    async def read(limit: int) -> list[str]:
        texts = []
        async for message in channel.history(limit=limit):
            if message.author.bot or message.webhook_id is not None:
                continue
            if me is not None and me in message.mentions:
                continue
            texts.append(message.content)
        return texts

    return read


async def setup(bot: commands.Bot) -> None:
    """Extension entry point."""
    await bot.add_cog(Topics(bot, deps_of(bot)))
