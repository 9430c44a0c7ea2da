"""`python -m bot` processes pointed at the loopback Discord (for several-process tests)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from tests.bot_process import bot_env
from tests.fakes.discord_server import FakeDiscord

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


@dataclass
class BotProcess:
    """A running `python -m bot`; `stderr` (its log) is read once it has stopped."""

    process: asyncio.subprocess.Process
    stderr: str = ""
    stopped: bool = False

    async def stop(self, timeout: float = 30) -> int:
        """SIGTERM, wait for the exit, keep its log; the exit code (again when stopped)."""
        if not self.stopped:
            if self.process.returncode is None:
                self.process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(self.process.communicate(), timeout)
            self.stderr = err.decode()
            self.stopped = True
        assert self.process.returncode is not None
        return self.process.returncode


@contextlib.asynccontextmanager
async def bot_process(
    server: FakeDiscord, db_path: Path, cwd: Path, **extra: str
) -> AsyncIterator[BotProcess]:
    """Run `python -m bot` (admin API off unless `extra` says otherwise) against `server`."""
    env = bot_env(db_path, DISCORD_TOKEN=server.token, ADMIN_ENABLED="false", **extra)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        ENTRY,
        server.api_url,
        server.gateway_url,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    running = BotProcess(process)
    try:
        yield running
    finally:
        await running.stop()
