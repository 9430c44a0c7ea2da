"""`python -m admin_api`: the admin API alone, on the bot's database and settings."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

from admin_api.app import serve
from admin_api.config import UnsafeBindError, admin_config, check_settings, start_warnings
from bot.config import Settings, load_settings
from bot.errors import StartupError
from bot.ops.settings_sync import settings_synced
from bot.runtime import event_loop
from bot.services import open_services
from bot.utils.log_setup import configure_logging

log = logging.getLogger("admin_api")


async def run(settings: Settings, stop: asyncio.Event | None = None) -> int:
    """Serve until SIGINT/SIGTERM (or until `stop` is set)."""
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with open_services(settings) as services:
            for warning in start_warnings(settings):
                log.warning("%s", warning)
            readiness = services.readiness
            await readiness.check()
            readiness.start(services.tasks, lambda: services.settings().readiness_interval)
            try:
                async with (
                    settings_synced(services.settings, services.tasks),
                    await serve(services, config=admin_config(settings)) as server,
                ):
                    print(f"PlayChat admin API on {server.url}", file=sys.stderr)
                    await stop.wait()
            finally:
                readiness.stop()
            await services.tasks.drain()
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    try:
        settings = load_settings()
    except StartupError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    configure_logging(settings.log_level, debug=settings.debug, secrets=settings.secret_values())
    try:
        check_settings(settings)
    except UnsafeBindError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    try:
        return event_loop.run(run(settings), settings.event_loop)
    except StartupError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"The admin API could not start: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
