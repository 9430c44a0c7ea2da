"""Runs the long-lived front ends (Discord client, admin API, scheduler) in one event loop."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from bot.bot import BotDeps, PlayChatBot, run_until_stopped
from bot.services import Services
from bot.store.model_presets import ModelPresetRepository
from bot.topics.scheduler import TopicScheduler

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2

INTENT_HELP = """\
Discord refused the connection: the bot asks for the Message Content intent, which is off.
Enable it: Discord Developer Portal → your application → Bot → Privileged Gateway Intents →
MESSAGE CONTENT INTENT, then start PlayChat again.
"""
LOGIN_HELP = """\
Discord rejected DISCORD_TOKEN. Copy the bot token again (Developer Portal → your application
→ Bot → Reset Token) into .env as DISCORD_TOKEN=... and start PlayChat again.
"""


def build_bot(services: Services, scheduler: TopicScheduler | None = None) -> PlayChatBot:
    """The Discord client with its dependencies (resources opened by the caller)."""
    deps = BotDeps(
        services=services,
        notes=services.notes,
        presets=ModelPresetRepository(services.db),
        topic_scheduler=scheduler,
    )
    return PlayChatBot(deps)


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
    scheduler: TopicScheduler | None = None,
) -> int:
    """Run the Discord client until SIGINT/SIGTERM (or `stop` is set); returns an exit code."""
    token = services.settings().secret("discord_token")
    if not token:
        print("DISCORD_TOKEN is not set.", file=sys.stderr)
        return EXIT_CONFIG
    stop = stop or asyncio.Event()
    installed = _install_signals(stop)
    try:
        outcome = await run_until_stopped(build_bot(services, scheduler), token, stop)
    finally:
        loop = asyncio.get_running_loop()
        for sig in installed:
            loop.remove_signal_handler(sig)
    if outcome == "intents_disabled":
        print(INTENT_HELP, file=sys.stderr, end="")
        return EXIT_CONFIG
    if outcome == "bad_token":
        print(LOGIN_HELP, file=sys.stderr, end="")
        return EXIT_CONFIG
    return EXIT_OK if outcome == "stopped" else EXIT_FAILED
