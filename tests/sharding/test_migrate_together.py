"""Processes starting at once on a new, empty database (a SQLite file, or PostgreSQL): one
migrates, the others wait and find the schema current (no "table already exists", no step
applied twice)."""

from __future__ import annotations

import asyncio
import sys

from bot.store.schema.migrations import SCHEMA_VERSION
from tests.bot_process import REPO
from tests.sharding.processes import SharedDatabase

# Waits for a line on stdin (the starting gun), then opens (and so migrates) the database.
OPEN = """
import asyncio, sys
from bot.store.engine.database import Database
sys.stdin.readline()
async def main():
    db = await Database.connect(sys.argv[1])
    await db.close()
asyncio.run(main())
print("opened")
"""
ROUNDS = 3
PROCESSES = 3


async def _start(url: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        OPEN,
        url,
        cwd=REPO,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _fresh(shared_db: SharedDatabase, round_: int) -> SharedDatabase:
    """Round 0 uses the fixture's empty database; later rounds another empty one."""
    if round_ == 0:
        return shared_db
    if shared_db.engine == "sqlite":
        return SharedDatabase(f"sqlite:///{shared_db.scratch}/fresh-{round_}.db", shared_db.scratch)
    [(name,)] = await shared_db.rows("SELECT current_database()")
    fresh = f"{name}_{round_}"
    await shared_db.rows(f'CREATE DATABASE "{fresh}" TEMPLATE template0')
    return SharedDatabase(shared_db.url.rsplit("/", 1)[0] + f"/{fresh}", shared_db.scratch)


async def test_processes_opening_a_fresh_database_at_once_all_start(
    shared_db: SharedDatabase,
) -> None:
    for round_ in range(ROUNDS):
        db = await _fresh(shared_db, round_)
        processes = [await _start(db.url) for _ in range(PROCESSES)]
        # All are loaded and waiting; release them together.
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(b"go\n")
        results = await asyncio.wait_for(asyncio.gather(*(p.communicate() for p in processes)), 60)
        for process, (out, err) in zip(processes, results, strict=True):
            assert process.returncode == 0, err.decode()[-2000:]
            assert out.decode().strip() == "opened"
        assert await db.schema_version() == SCHEMA_VERSION
        if db.engine == "sqlite":
            assert await db.rows("PRAGMA integrity_check") == [("ok",)]
        else:
            assert await db.rows("SELECT count(*) FROM schema_version") == [(1,)]
