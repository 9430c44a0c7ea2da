"""Two processes starting at once on a new database file: one migrates, the other waits and
finds the schema current (no "table already exists", no step applied twice)."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

from bot.store.migrations import SCHEMA_VERSION
from tests.bot_process import REPO

# Waits for a line on stdin (the starting gun), then opens (and so migrates) the database.
OPEN = """
import asyncio, sys
from bot.store.db import Database
sys.stdin.readline()
async def main():
    db = await Database.open(sys.argv[1])
    await db.close()
asyncio.run(main())
print("opened")
"""
ROUNDS = 4


async def _start(path: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        OPEN,
        str(path),
        cwd=REPO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_two_processes_opening_a_fresh_file_at_once_both_start(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        path = tmp_path / f"fresh-{round_}.db"
        processes = [await _start(path), await _start(path)]
        # Both are loaded and waiting; release them together.
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(b"go\n")
        results = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in processes)), 60)
        for process, (out, err) in zip(processes, results, strict=True):
            assert process.returncode == 0, err.decode()[-2000:]
            assert out.decode().strip() == "opened"
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
