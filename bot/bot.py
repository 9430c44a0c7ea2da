"""The Discord client (a commands.Bot given every dependency) and its runner."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import discord
from discord import app_commands
from discord.ext import commands

from bot.config import Settings
from bot.ops.probes import ShardLink, discord_check
from bot.ops.readiness import Check, ComponentStatus
from bot.prompts.ui_text import ui_text
from bot.services import Services
from bot.utils.access import AccessPolicy, Requester
from bot.utils.outage_log import OutageLog

log = logging.getLogger(__name__)

# Exactly what the bot uses: read and answer in channels and threads, open public threads on
# a message, upload exports, run slash commands. No embeds (previews are suppressed anyway).
REQUIRED_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    create_public_threads=True,
    send_messages_in_threads=True,
    read_message_history=True,
    attach_files=True,
    use_application_commands=True,
)
INVITE_SCOPES = ("bot", "applications.commands")
DEFAULT_EXTENSIONS = (
    "bot.exts.errors",
    "bot.exts.chat",
    "bot.exts.notes",
    "bot.exts.memory",
    "bot.exts.knowledge",
    "bot.exts.model",
    "bot.exts.export",
    "bot.exts.reset",
    "bot.exts.topics",
    "bot.exts.tools",
    "bot.exts.spaces",
    "bot.exts.directory",
)
SHUTDOWN_GRACE = 10.0

RunOutcome = Literal["stopped", "bad_token", "intents_disabled", "failed"]


class InFlight:
    """Counts running turns so that shutdown can give them a grace period."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.closing = False

    @property
    def count(self) -> int:
        """Turns running now."""
        return self._count

    @contextlib.asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        """Count the enclosed turn."""
        self._count += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._count -= 1
            if self._count == 0:
                self._idle.set()

    async def wait_idle(self, within: float) -> bool:
        """Wait until no turn runs (True) or `within` seconds pass (False)."""
        try:
            async with asyncio.timeout(within):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True


@dataclass
class BotDeps:
    """Everything the bot and its extensions use, opened by the composition root."""

    services: Services
    clock: Callable[[], float] = time.monotonic
    # Wall-clock time (aware, UTC) for dates that are stored, e.g. when the bot left a server.
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    turns: InFlight = field(default_factory=InFlight)


def build_intents(settings: Settings) -> discord.Intents:
    """Only what is used: guilds, guild and (if allowed) DM messages, message content, and
    typing in both (a member still typing lets their next message join the turn)."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.guild_typing = True
    intents.dm_messages = settings.discord_allow_dms
    intents.dm_typing = settings.discord_allow_dms
    intents.message_content = True
    return intents


def invite_url(application_id: int) -> str:
    """The OAuth2 URL that adds the bot with exactly the permissions it needs."""
    return discord.utils.oauth_url(
        application_id, permissions=REQUIRED_PERMISSIONS, scopes=INVITE_SCOPES
    )


def interaction_requester(interaction: discord.Interaction) -> Requester:
    """Who ran a command, and where (a thread counts with its parent channel)."""
    user = interaction.user
    roles = frozenset(r.id for r in user.roles) if isinstance(user, discord.Member) else frozenset()
    channel = interaction.channel
    ids = [interaction.channel_id] if interaction.channel_id is not None else []
    if isinstance(channel, discord.Thread) and channel.parent_id is not None:
        ids.append(channel.parent_id)
    return Requester(user.id, roles, tuple(ids), is_dm=interaction.guild is None)


class PlayChatTree(app_commands.CommandTree["PlayChatBot"]):
    """The command tree; the chat's allow/deny lists apply to slash commands too."""

    async def interaction_check(self, interaction: discord.Interaction[PlayChatBot], /) -> bool:
        """Refuse (ephemerally) users and places the access lists exclude."""
        settings = self.client.deps.services.settings()
        verdict = AccessPolicy.from_settings(settings).check(interaction_requester(interaction))
        # Slash commands in DMs need no DM intent; DISCORD_ALLOW_DMS governs them as well.
        if verdict == "allowed":
            return True
        log.debug("refusing interaction %d: %s", interaction.id, verdict)
        if interaction.type is discord.InteractionType.application_command:
            await interaction.response.send_message(
                ui_text(settings.language).access_denied, ephemeral=True
            )
        return False


class PlayChatBot(commands.Bot):
    """The PlayChat Discord client; extensions get their dependencies from `self.deps`.

    One unsharded gateway connection; `ShardedPlayChatBot` is the same client on a set of
    shards (`build_bot` picks it when SHARD_COUNT is set).
    """

    def __init__(self, deps: BotDeps, *, extensions: Sequence[str] = DEFAULT_EXTENSIONS) -> None:
        # PlayChat uses no voice: the client's "PyNaCl/davey is not installed" warnings would
        # only alarm owners. discord.py warns once per process, guarded by these flags.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        settings = deps.services.settings()
        super().__init__(
            command_prefix="!playchat ",
            help_command=None,
            tree_cls=PlayChatTree,
            intents=build_intents(settings),
            allowed_mentions=discord.AllowedMentions.none(),
            chunk_guilds_at_startup=False,
            max_messages=1000,
            **self._gateway_options(settings),
        )
        self.deps = deps
        self._extension_names = tuple(extensions)
        self._guild_ids = tuple(settings.discord_guild_ids)
        self._announced = False
        # What Discord shows after IDENTIFY: online, no activity.
        self._presence: tuple[str, str | None] = (str(discord.Status.online), None)
        # One WARNING when the gateway is lost, one INFO when it is back (not a traceback per
        # reconnect attempt); installed by setup_hook, removed again in close().
        self._outage = OutageLog()
        readiness = deps.services.readiness
        readiness.register("discord", self._discord_readiness)
        readiness.add_listener(self._on_readiness)

    def _gateway_options(self, settings: Settings) -> dict[str, Any]:
        """Extra client options for the gateway connection (none: one unsharded connection)."""
        return {}

    def _gateway_connected(self) -> bool:
        """Whether the gateway connection is up."""
        return self.ws is not None

    def _shard_links(self) -> list[ShardLink]:
        """Each shard's connection (none: one unsharded connection)."""
        return []

    async def _discord_readiness(self) -> Check:
        """The connection as this client sees it, for the readiness report."""
        # A gateway reconnect (routine) is not reported; the periodic check sees a long one.
        connected = self.is_ready() and not self.is_closed() and self._gateway_connected()
        return discord_check(
            connected=connected,
            ever=self._announced and not self.is_closed(),
            servers=len(self.guilds),
            latency=self.latency if connected else None,
            shards=self._shard_links() if not self.is_closed() else (),
        )

    async def _on_readiness(self, new: ComponentStatus, old: ComponentStatus) -> None:
        if new.name == "model":
            await self.show_readiness()

    def presence(self) -> tuple[discord.Status, str | None]:
        """Idle with a short notice while the model is down; online otherwise."""
        model = self.deps.services.readiness.status("model")
        if model.state == "down":
            notice = ui_text(self.deps.services.settings().language).presence_model_down
            return discord.Status.idle, notice
        return discord.Status.online, None

    async def show_readiness(self) -> None:
        """Show the model's readiness in the bot's presence (once per change, when connected)."""
        status, text = self.presence()
        key = (str(status), text)
        if key == self._presence or not self.is_ready() or self.is_closed():
            return
        activity = discord.CustomActivity(name=text) if text else None
        try:
            await self.change_presence(status=status, activity=activity)
        except (discord.DiscordException, ConnectionError) as exc:
            log.debug("could not update the presence: %s", exc)
            return
        self._presence = key

    async def setup_hook(self) -> None:
        """Load the extensions, then register the slash commands with Discord."""
        self._outage.install()
        for name in self._extension_names:
            await self.load_extension(name)
        try:
            await self.sync_commands()
        except discord.HTTPException as exc:
            log.error(
                "could not register slash commands (%s); was the bot invited with the "
                "applications.commands scope? Chat still works.",
                exc,
            )

    async def sync_commands(self) -> None:
        """Guild-scoped (instant) to DISCORD_GUILD_IDS when set, else global."""
        if not self._guild_ids:
            synced = await self.tree.sync()
            log.info("synced %d global slash commands", len(synced))
            return
        for guild_id in self._guild_ids:
            guild = discord.Object(guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d slash commands to guild %d", len(synced), guild_id)

    async def on_ready(self) -> None:
        """Log who we are and the invite URL (once); show the readiness in the presence."""
        if self.user is None:
            return
        if not self._announced:
            self._announced = True
            app_id = self.application_id or self.user.id
            log.info(
                "logged in as %s (id %d) in %d guilds", self.user, self.user.id, len(self.guilds)
            )
            log.info("invite PlayChat to a server with: %s", invite_url(app_id))
        self._outage.recovered()
        await self.deps.services.readiness.check(["discord"])
        self._presence = (str(discord.Status.online), None)  # a new session's default
        await self.show_readiness()

    async def on_resumed(self) -> None:
        """Back on the gateway: Discord is ready again."""
        self._outage.recovered()
        await self.deps.services.readiness.check(["discord"])

    async def shutdown(self, grace: float = SHUTDOWN_GRACE) -> None:
        """Refuse new turns, give running ones `grace` seconds, then close the connection."""
        self.deps.turns.closing = True
        if self.deps.turns.count and not await self.deps.turns.wait_idle(grace):
            log.warning("closing with %d turns still running", self.deps.turns.count)
        await self.close()

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        """An event handler failed; while closing (the database may be gone) only at DEBUG."""
        if self.is_closed() or self.deps.turns.closing:
            log.debug("event %s failed while shutting down", event_method, exc_info=True)
            return
        await super().on_error(event_method, *args, **kwargs)

    async def close(self) -> None:
        """Leave the readiness report (a later client may take its place), then disconnect."""
        readiness = self.deps.services.readiness
        readiness.remove_listener(self._on_readiness)
        readiness.unregister("discord", self._discord_readiness)
        self._outage.uninstall()
        await super().close()


class ShardedPlayChatBot(PlayChatBot, commands.AutoShardedBot):
    """PlayChat on the shards SHARD_IDS of SHARD_COUNT: one gateway connection per shard,
    only those shards' servers (and, on shard 0, direct messages)."""

    def _gateway_options(self, settings: Settings) -> dict[str, Any]:
        """The shard count and this process's shards."""
        shards = settings.shards
        return {"shard_count": shards.count, "shard_ids": sorted(shards.ids)}

    def _gateway_connected(self) -> bool:
        """Every shard's connection is up."""
        return bool(self.shards) and not any(s.is_closed() for s in self.shards.values())

    def _shard_links(self) -> list[ShardLink]:
        """Each of this process's shards: connected or not, and its heartbeat latency."""
        links = []
        for shard_id in sorted(self.deps.services.settings().shards.ids):
            shard = self.shards.get(shard_id)
            connected = shard is not None and not shard.is_closed()
            latency = shard.latency if shard is not None and connected else None
            links.append(ShardLink(shard_id, connected, latency))
        return links


async def run_until_stopped(bot: PlayChatBot, token: str, stop: asyncio.Event) -> RunOutcome:
    """Run `bot` until `stop` is set (clean shutdown) or the client fails; say how it ended."""
    client = asyncio.create_task(bot.start(token), name="discord-client")
    stopper = asyncio.create_task(stop.wait(), name="discord-stop")
    try:
        await asyncio.wait({client, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if stop.is_set():
            log.info("shutting down")
        await bot.shutdown()
        await client
    except discord.PrivilegedIntentsRequired:
        return "intents_disabled"
    except discord.LoginFailure:
        return "bad_token"
    except (discord.DiscordException, OSError) as exc:
        log.error("the Discord client stopped: %s", exc)
        return "failed"
    finally:
        stopper.cancel()
        if not bot.is_closed():
            await bot.close()
    return "stopped" if stop.is_set() else "failed"


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2


def build_bot(services: Services) -> PlayChatBot:
    """The Discord client with its dependencies (resources opened by the caller): sharded
    when SHARD_COUNT is set, else one plain connection."""
    settings = services.settings()
    if settings.shard_count is None:
        return PlayChatBot(BotDeps(services=services))
    log.info("connecting to Discord as %s", settings.shards.describe())
    return ShardedPlayChatBot(BotDeps(services=services))


def _install_signals(stop: asyncio.Event) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix loops
            continue
        installed.append(sig)
    return installed


async def run_discord(
    services: Services,
    *,
    stop: asyncio.Event | None = None,
) -> int:
    """Run the Discord client until SIGINT/SIGTERM (or `stop` is set); returns an exit code."""
    ui = ui_text(services.settings().language)
    token = services.settings().secret("discord_token")
    if not token:
        print(ui.runner_no_token, file=sys.stderr)
        return EXIT_CONFIG
    stop = stop or asyncio.Event()
    installed = _install_signals(stop)
    try:
        outcome = await run_until_stopped(build_bot(services), token, stop)
    finally:
        loop = asyncio.get_running_loop()
        for sig in installed:
            loop.remove_signal_handler(sig)
    if outcome == "intents_disabled":
        print(ui.runner_intents_disabled, file=sys.stderr, end="")
        return EXIT_CONFIG
    if outcome == "bad_token":
        print(ui.runner_bad_token, file=sys.stderr, end="")
        return EXIT_CONFIG
    return EXIT_OK if outcome == "stopped" else EXIT_FAILED
