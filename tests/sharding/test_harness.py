"""The several-process harness itself: a process that dies at start is reported at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bot.store.engine.dialect import sqlite_url
from tests.fakes.discord_server import FakeDiscord
from tests.sharding.processes import START, SharedDatabase, bot_process, wait_ready


async def test_wait_ready_fails_at_once_with_the_log_of_a_process_that_exited(
    tmp_path: Path,
) -> None:
    """Not after START seconds of waiting for a shard nobody will connect (the [postgresql]
    three-process test waited out its minute after a process had died at start)."""
    db = SharedDatabase(sqlite_url(tmp_path / "p.db"), tmp_path)
    async with FakeDiscord(shards=2) as server:
        guild = server.add_guild("server", shard=1)
        # SHARD_IDS without SHARD_COUNT: the settings refuse it and the process exits.
        async with bot_process(server, db, tmp_path, SHARD_IDS="1") as dead:
            began = time.monotonic()
            with pytest.raises(AssertionError) as failed:
                await wait_ready(server, [guild], processes=(dead,))
            waited = time.monotonic() - began
    assert waited < START / 2, waited
    assert "exited before it was ready (exit codes: {0: 2})" in str(failed.value)
    assert "SHARD_IDS needs SHARD_COUNT" in str(failed.value)
