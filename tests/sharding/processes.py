"""`python -m bot` and `python -m admin_api` processes for several-process tests: the bots
pointed at the loopback Discord, their logs read as they are written, all on one
`SharedDatabase` (a SQLite file or a PostgreSQL database)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import re
import signal
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bot.ops.pg_notify import asyncpg_dsn
from bot.store.engine.dialect import dialect_of, postgres_statement, sqlite_path
from tests.bot_process import bot_env, spawn_entry
from tests.fakes.discord_gateway import GatewaySession
from tests.fakes.discord_server import FakeDiscord, FakeGuild

# The real entry point, with discord.py pointed at the loopback server first.
ENTRY = """
import sys, yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route
Route.BASE = sys.argv[1]
DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(sys.argv[2])
from bot.__main__ import main
sys.exit(main([]))
"""
START = 60.0


@dataclass(frozen=True)
class SharedDatabase:
    """The database every process of a test shares: `url` goes into each one's DATABASE_URL;
    `rows` reads it for assertions (with the engine's own driver, so nothing is migrated)."""

    url: str
    # DB_PATH for the processes: the file a sqlite:/// URL names; unused on PostgreSQL.
    scratch: Path

    @property
    def engine(self) -> str:
        """Which engine: "sqlite" or "postgresql"."""
        return dialect_of(self.url)

    def env(self, **extra: str) -> dict[str, str]:
        """A child process's environment on this database (no stray PlayChat variables)."""
        path = sqlite_path(self.url) if self.engine == "sqlite" else self.scratch / "unused.db"
        return bot_env(path, DATABASE_URL=self.url, **extra)

    async def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one query (`?` placeholders) on its own connection; the rows as tuples."""
        if self.engine == "sqlite":
            with contextlib.closing(sqlite3.connect(sqlite_path(self.url))) as db:
                return [tuple(r) for r in db.execute(sql, tuple(params)).fetchall()]
        asyncpg = importlib.import_module("asyncpg")
        conn = await asyncpg.connect(asyncpg_dsn(self.url))
        try:
            text, values = postgres_statement(sql, tuple(params))
            return [tuple(r) for r in await conn.fetch(text, *values)]
        finally:
            await conn.close()

    async def schema_version(self) -> int:
        """The schema version the database records."""
        if self.engine == "sqlite":
            [(version,)] = await self.rows("PRAGMA user_version")
        else:
            [(version,)] = await self.rows("SELECT version FROM schema_version")
        return int(version)


@dataclass
class BotProcess:
    """A running child process; `stderr` (its log) grows as the process writes it."""

    process: asyncio.subprocess.Process
    stderr: str = ""
    stopped: bool = False
    _reader: asyncio.Task[None] | None = None
    _grew: asyncio.Condition = field(default_factory=asyncio.Condition)

    def __post_init__(self) -> None:
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while line := await stream.readline():
            async with self._grew:
                self.stderr += line.decode(errors="replace")
                self._grew.notify_all()

    async def wait_for_log(self, pattern: str, timeout: float = START, count: int = 1) -> str:
        """Wait until the log matches `pattern` (`count` times); the last match."""

        def matches() -> list[str]:
            return [m.group(0) for m in re.finditer(pattern, self.stderr)]

        async with self._grew:
            try:
                await asyncio.wait_for(
                    self._grew.wait_for(lambda: len(matches()) >= count), timeout
                )
            except TimeoutError:
                raise AssertionError(f"no {pattern!r} in the log:\n{self.stderr[-3000:]}") from None
        return matches()[-1]

    async def exited(self) -> int:
        """Wait until the process ends by itself (its log read to the end); the exit code."""
        code = await self.process.wait()
        if self._reader is not None:
            # Shielded: cancelling this wait must not stop the reading of the log.
            await asyncio.shield(self._reader)
        return code

    async def _finish(self, timeout: float) -> int:
        await asyncio.wait_for(self.process.wait(), timeout)
        if self._reader is not None:
            await self._reader
        self.stopped = True
        assert self.process.returncode is not None
        return self.process.returncode

    async def stop(self, timeout: float = 30) -> int:
        """SIGTERM, wait for the exit (its log read to the end); the exit code."""
        if not self.stopped and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        return await self._finish(timeout)

    async def kill(self) -> int:
        """SIGKILL: no shutdown at all, as when the machine or the OOM killer stops it."""
        if self.process.returncode is None:
            self.process.kill()
        return await self._finish(30)


@contextlib.asynccontextmanager
async def bot_process(
    server: FakeDiscord, db: SharedDatabase, cwd: Path, **extra: str
) -> AsyncIterator[BotProcess]:
    """Run `python -m bot` (admin API off unless `extra` says otherwise) against `server`."""
    env = db.env(DISCORD_TOKEN=server.token, ADMIN_ENABLED="false", **extra)
    process = await spawn_entry(ENTRY, server.api_url, server.gateway_url, env, cwd)
    running = BotProcess(process)
    try:
        yield running
    finally:
        await running.stop()


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class AdminProcess:
    """`python -m admin_api` running alone; `url` is where it listens."""

    running: BotProcess
    url: str


@contextlib.asynccontextmanager
async def admin_process(db: SharedDatabase, cwd: Path, **extra: str) -> AsyncIterator[AdminProcess]:
    """Run the admin API alone on the same database; ready once it printed its address."""
    env = db.env(ADMIN_HOST="127.0.0.1", ADMIN_PORT=str(free_port()), LOG_LEVEL="INFO", **extra)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "admin_api",
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    running = BotProcess(process)
    try:
        line = await running.wait_for_log(r"PlayChat admin API on (\S+)")
        yield AdminProcess(running, line.rsplit(" ", 1)[-1])
    finally:
        await running.stop()


def ready_session(server: FakeDiscord, guild: FakeGuild, after: int = 0) -> GatewaySession | None:
    """The newest connected session of the guild's shard (beyond its first `after`) that has
    been told of the guild, if any."""
    sessions = server.sessions_of_shard(server.shard_of(guild.id))[after:]
    for session in reversed(sessions):
        if session.connection is not None and any(
            e == "GUILD_CREATE" and d["id"] == str(guild.id) for _, e, d in session.events
        ):
            return session
    return None


async def wait_ready(
    server: FakeDiscord,
    guilds: Sequence[FakeGuild],
    after: int = 0,
    processes: Sequence[BotProcess] = (),
) -> None:
    """Wait until each guild was announced to a live session of its shard (a process is ready
    for a server once its shard's GUILD_CREATE came); fail at once when one of `processes`
    exits meanwhile, and on failure say what `processes` logged."""

    async def ready() -> None:
        for guild in guilds:
            await server.wait_for(partial(ready_session, server, guild, after), START)

    readiness = asyncio.ensure_future(ready())
    exits = [asyncio.ensure_future(p.exited()) for p in processes]
    try:
        await asyncio.wait([readiness, *exits], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in (readiness, *exits):
            waiting.cancel()
        await asyncio.gather(readiness, *exits, return_exceptions=True)
    if readiness.done() and not readiness.cancelled():
        error = readiness.exception()
        if error is None:
            return
        if not isinstance(error, TimeoutError):
            raise error
        problem = str(error)
    else:
        codes = {i: p.process.returncode for i, p in enumerate(processes)}
        problem = f"a process exited before it was ready (exit codes: {codes})"
    logs = "\n".join(f"--- process {i}:\n{p.stderr[-2000:]}" for i, p in enumerate(processes))
    raise AssertionError(f"{problem}\n{logs}")
