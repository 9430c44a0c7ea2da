"""Composition root: `python -m bot` runs the bot; `python -m bot chat` a terminal chat."""

from __future__ import annotations

import argparse
import asyncio
import errno
import functools
import importlib
import logging
import sys
from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING

from bot.config import Settings, load_settings
from bot.errors import ConfigurationError, StartupError, ValidationError
from bot.prompts.ui_text import ui_text
from bot.runtime import event_loop
from bot.store.spaces import local_space
from bot.utils.log_setup import configure_logging, log_to_file

if TYPE_CHECKING:
    from admin_api.config import AdminConfig
    from bot.memory.japanese import JapaneseAnalyzer
    from bot.services import Services

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
        choices=["run", "chat", "backup", "migrate-db"],
        help="run: the Discord bot and admin API (default); chat: a terminal chat; "
        "backup PATH: a consistent copy of the database (also while the bot runs); "
        "migrate-db --to URL: copy the SQLite database at DB_PATH into an empty PostgreSQL",
    )
    parser.add_argument("--to", metavar="URL", help="migrate-db: the postgresql:// URL to fill")
    parser.add_argument(
        "path", nargs="?", help="backup: the file to write, or a folder (ending in /) to write into"
    )
    parser.add_argument(
        "--space",
        metavar="NAME",
        help="chat: the local space to talk in, NAME or local:NAME (default: the LOCAL_SPACE "
        "setting)",
    )
    args = parser.parse_args(argv)
    if args.space is not None:
        if args.command != "chat":
            parser.error("--space applies to `python -m bot chat` only.")
        try:
            args.space = terminal_space(args.space)
        except ValidationError as exc:
            parser.error(f"--space: {exc}")
    if args.command == "backup" and args.path is None:
        parser.error("backup needs a PATH, e.g.: python -m bot backup backups/")
    if args.command == "migrate-db" and not (args.to or "").startswith("postgres"):
        parser.error("migrate-db needs --to postgresql://USER:PASSWORD@HOST/DB")
    if args.command != "backup" and args.path is not None:
        parser.error(f"{args.command} takes no PATH")
    return args


def terminal_space(value: str) -> str:
    """The local space id `--space` names (NAME or local:NAME); ValidationError for others."""
    kind, sep, name = value.partition(":")
    if sep and kind in ("guild", "dm"):
        raise ValidationError(
            "The terminal chat talks in a local space: give a NAME or local:NAME, not a "
            "Discord server's or user's space."
        )
    return local_space(name if sep and kind == "local" else value)


async def run_chat(settings: Settings, space: str | None = None) -> int:
    """The terminal chat on the real engine, in the local space id `space` (or LOCAL_SPACE)."""
    from bot.chat.terminal import TerminalChat, backend_address
    from bot.runtime.heap import frozen_start_up_heap
    from bot.services import open_services

    space_id = space or settings.local_space_id
    # At a terminal the screen is the conversation's: the log goes to a file, named in the banner.
    log_note = _log_chat_to_file(settings) if sys.stdin.isatty() else ""
    async with open_services(settings) as services:
        ui = ui_text(services.settings().language)
        record = await services.repos.spaces.get(space_id)
        model = (record.default_model if record else None) or services.settings().llm_model
        chat = TerminalChat(
            services.engine,
            ui=ui,
            space_id=space_id,
            model=model,
            address=lambda name: backend_address(services.settings(), name),
            log_note=log_note,
            page_settings=len(services.settings.page_overrides()),
        )
        with frozen_start_up_heap():
            code = await chat.run()
        await services.tasks.drain()
        return code


def _log_chat_to_file(settings: Settings) -> str:
    """Log to the chat's log file; the banner's line saying where (or why it stays here)."""
    from bot.chat.terminal import chat_log_path

    ui = ui_text(settings.language)
    path = chat_log_path(settings)
    try:
        log_to_file(path)
    except OSError as exc:
        return ui.terminal_log_unwritable.format(path=path, reason=exc.strerror or exc)
    return ui.terminal_log_note.format(path=path)


async def serve_all(
    services: Services,
    *,
    stop: asyncio.Event | None = None,
    admin: Awaitable[AdminConfig] | None = None,
) -> int:
    """Topic scheduler, admin API and Discord client in this loop until SIGINT/SIGTERM.

    `admin`: the admin API's configuration, already being made (see `_prepare_serving`);
    made here when not given."""
    from admin_api import serve
    from admin_api.config import admin_config, start_warnings
    from bot.bot import run_discord
    from bot.ops.probes import scheduler_probe
    from bot.ops.settings_sync import settings_synced
    from bot.topics.scheduler import TopicScheduler

    settings = services.settings()
    scheduler = TopicScheduler(services.topics, shards=settings.shards)
    await scheduler.start()
    readiness = services.readiness
    readiness.register("scheduler", scheduler_probe(scheduler))
    try:
        for warning in start_warnings(settings):
            log.warning("%s", warning)
        # Before Discord connects, so the first presence and the log already say what is down;
        # the probes run together, each bounded by a few seconds.
        await readiness.check()
        readiness.start(services.tasks, lambda: services.settings().readiness_interval)
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(settings_synced(services.settings, services.tasks))
            if settings.admin_enabled:
                config = await admin if admin is not None else admin_config(settings)
                try:
                    server = await serve(services, config=config)
                except OSError as exc:
                    raise bind_failure(config.host, config.port, exc) from exc
                stack.push_async_callback(server.close)  # it logs its own address
            return await run_discord(services, stop=stop)
    finally:
        readiness.stop()
        readiness.unregister("scheduler")
        scheduler.shutdown()


def _prepare_serving(settings: Settings, admin: list[asyncio.Future[AdminConfig]]) -> None:
    """Refuse an unsafe admin bind; import what `serve_all` needs (the admin API, discord.py,
    the scheduler); start making the admin API's configuration on a thread (into `admin`).
    Run while the analysis worker loads (see `bot.ops.startup`)."""
    from admin_api.config import UnsafeBindError, admin_config, check_settings

    try:
        check_settings(settings)
    except UnsafeBindError as exc:
        raise ConfigurationError(str(exc)) from exc
    for module in ("bot.bot", "bot.ops.settings_sync", "bot.topics.scheduler"):
        importlib.import_module(module)
    if settings.admin_enabled:
        # Its scrypt hash of ADMIN_PASSWORD (~0.07 s of CPU, run without the GIL) is made on
        # the other core while this thread opens the services, not on the event loop later.
        loop = asyncio.get_running_loop()
        admin.append(loop.run_in_executor(None, admin_config, settings))


def _open_services(
    settings: Settings, analyzer: JapaneseAnalyzer
) -> AbstractAsyncContextManager[Services]:
    """The services over the analysis worker `bot.ops.startup` spawned. `bot.services` is
    imported here, after the spawn, so that the worker loads while this process imports it."""
    from bot.services import open_services

    return open_services(settings, analyzer=analyzer)


async def run_bot(settings: Settings) -> int:
    """The Discord bot, admin API and scheduler until SIGINT/SIGTERM."""
    from bot.ops.startup import started_services

    admin: list[asyncio.Future[AdminConfig]] = []
    prepare = functools.partial(_prepare_serving, settings, admin)
    opener = functools.partial(_open_services, settings)
    async with started_services(opener, preload=prepare) as services:
        # Once open: a start that fails still says one sentence and nothing more.
        log.info("event loop: %s", event_loop.loop_name(asyncio.get_running_loop()))
        return await serve_all(services, admin=admin[0] if admin else None)


def bind_failure(host: str, port: int, exc: OSError) -> StartupError:
    """One sentence naming the admin API's address, why it cannot listen there, and the fix."""
    where = f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return StartupError(
            f"The admin API cannot listen on {where}: the port is in use (is PlayChat already "
            "running?); stop the other program or set ADMIN_PORT to a free port."
        )
    if exc.errno == errno.EACCES:
        return StartupError(
            f"The admin API may not listen on {where} (permission denied); set ADMIN_PORT to "
            "a port above 1023."
        )
    reason = exc.strerror or str(exc)
    return StartupError(
        f"The admin API cannot listen on {where} ({reason}); set ADMIN_HOST to an address of "
        "this machine, such as 127.0.0.1."
    )


def backup(settings: Settings, target: str) -> int:
    """`python -m bot backup PATH`: copy the database consistently, also while the bot runs."""
    from bot.store.engine.backup import BackupError, backup_database, record_backup, resolve_target
    from bot.store.engine.dialect import dialect_of

    if dialect_of(settings.database()) == "postgresql":
        raise BackupError(
            "DATABASE_URL names PostgreSQL: back it up with pg_dump (e.g. pg_dump -Fc -f "
            "playchat.dump DBNAME); python -m bot backup copies SQLite files only."
        )
    written = backup_database(settings.db_path, resolve_target(target))
    record_backup(settings.db_path, "cli", str(written))
    print(written)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = _parse_args(argv)
    try:
        settings = load_settings()
    except StartupError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    configure_logging(settings.log_level, debug=settings.debug, secrets=settings.secret_values())
    try:
        return _dispatch(args, settings)
    except StartupError as exc:
        # The sentence says what to fix; the traceback is for DEBUG.
        log.debug("start-up failed", exc_info=True)
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def migrate_db(settings: Settings, url: str) -> int:
    """`python -m bot migrate-db --to URL`: copy DB_PATH into an empty PostgreSQL, verified."""
    from bot.store.engine.copy import copy_sqlite_to_postgresql

    report = event_loop.run(copy_sqlite_to_postgresql(settings.db_path, url), settings.event_loop)
    for table in report:
        print(f"{table.table}: {table.rows} rows, checksum {table.checksum[:16]} (matches)")
    print(f"Copied and verified {sum(t.rows for t in report)} rows; set DATABASE_URL to use it.")
    return 0


def _dispatch(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "backup":
        return backup(settings, args.path)
    if args.command == "migrate-db":
        return migrate_db(settings, args.to)
    if args.command == "run" and settings.discord_token is None:
        print(SETUP_HELP, file=sys.stderr, end="")
        return 2
    if args.command == "chat":
        return event_loop.run(run_chat(settings, args.space), settings.event_loop)
    return event_loop.run(run_bot(settings), settings.event_loop)


if __name__ == "__main__":
    sys.exit(main())
