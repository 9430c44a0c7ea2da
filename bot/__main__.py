"""Composition root: `python -m bot` runs the bot; `python -m bot chat` a terminal chat."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from contextlib import AsyncExitStack

from pydantic import ValidationError as PydanticValidationError

from admin_api.config import UnsafeBindError, check_settings
from bot.config import Settings
from bot.errors import DatabaseVersionError
from bot.prompts.ui_text import ui_text
from bot.services import Services, open_services
from bot.utils.log_setup import configure_logging

log = logging.getLogger("bot")

SETUP_HELP = """\
DISCORD_TOKEN is not set, so the Discord bot cannot start.
Set it in .env (copy .env.example) or the environment:  DISCORD_TOKEN=your-bot-token
To try PlayChat without Discord, run the terminal chat:  make chat   (or: python -m bot chat)
"""


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bot", description="PlayChat Discord AI bot")
    parser.add_argument(
        "command",
        nargs="?",
        default="run",
        choices=["run", "chat"],
        help="run: the Discord bot and admin API (default); chat: a terminal chat",
    )
    return parser.parse_args(argv)


async def run_chat(settings: Settings) -> int:
    """The terminal chat on the real engine."""
    from bot.chat.terminal import TerminalChat

    async with open_services(settings) as services:
        ui = ui_text(services.settings().language)
        code = await TerminalChat(services.engine, ui=ui).run()
        await services.tasks.drain()
        return code


async def serve_all(services: Services, *, stop: asyncio.Event | None = None) -> int:
    """Topic scheduler, admin API and Discord client in this loop until SIGINT/SIGTERM."""
    from admin_api import serve
    from admin_api.config import admin_config
    from bot.bot import run_discord
    from bot.topics.scheduler import TopicScheduler

    settings = services.settings()
    scheduler = TopicScheduler(services.topics)
    await scheduler.start()
    try:
        async with AsyncExitStack() as stack:
            if settings.admin_enabled:
                server = await serve(services, config=admin_config(settings))
                stack.push_async_callback(server.close)
                log.info("admin API on %s", server.url)
            return await run_discord(services, stop=stop)
    finally:
        scheduler.shutdown()


async def run_bot(settings: Settings) -> int:
    """The Discord bot, admin API and scheduler until SIGINT/SIGTERM."""
    async with open_services(settings) as services:
        return await serve_all(services)


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = _parse_args(argv)
    try:
        settings = Settings()
    except PydanticValidationError as exc:
        print(f"Invalid configuration:\n{exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, debug=settings.debug, secrets=settings.secret_values())
    if args.command == "run":
        if settings.discord_token is None:
            print(SETUP_HELP, file=sys.stderr, end="")
            return 2
        try:
            check_settings(settings)
        except UnsafeBindError as exc:
            print(str(exc), file=sys.stderr)
            return 2
    try:
        runner = run_chat if args.command == "chat" else run_bot
        return asyncio.run(runner(settings))
    except DatabaseVersionError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
