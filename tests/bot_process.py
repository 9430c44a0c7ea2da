"""Running `python -m bot` as a child process with a clean, test-only environment."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bot_env(db_path: Path, **extra: str) -> dict[str, str]:
    """This environment without PlayChat's own variables, plus the database, English and `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DISCORD_", "LLM_", "ADMIN_", "DB_", "DATABASE_", "SHARD_"))
    }
    env.update(PYTHONPATH=str(REPO), DB_PATH=str(db_path), LANGUAGE="en")
    env.update(extra)
    return env


async def run_python(
    args: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b""
) -> tuple[int, str, str]:
    """`python ARGS` fed `stdin`: its exit code, stdout and stderr (60 s at most)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def run_python_m_bot(
    args: list[str], env: dict[str, str], cwd: Path, stdin: bytes = b""
) -> tuple[int, str, str]:
    """`python -m bot ARGS` fed `stdin`: its exit code, stdout and stderr (60 s at most)."""
    return await run_python(["-m", "bot", *args], env, cwd, stdin)


async def spawn_entry(
    entry: str, api_url: str, gateway_url: str, env: dict[str, str], cwd: Path
) -> asyncio.subprocess.Process:
    """`python -c ENTRY API_URL GATEWAY_URL` (an entry that points discord.py at a loopback
    Discord, then runs the bot), its stderr piped and its stdin and stdout closed."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        entry,
        api_url,
        gateway_url,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
