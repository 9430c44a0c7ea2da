"""How soon a runtime setting changed in one process shows in another, under a NOTIFY flood.

Two PlayChat settings syncs (each with its own connection and RuntimeSettings, as two shard
processes hold) over one temporary PostgreSQL database. Each round first floods the settings
channel with `--flood` distinct notifications from a third connection (another program, or a
storm of writes), then changes a setting in the first sync and times until the second one
serves the new value. Rounds without a flood give the baseline. Prints one JSON object, then
a one-line summary.

Run: .venv/bin/python bench/settings_flood.py [--rounds 5] [--flood 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import asyncpg  # noqa: E402

from bot.config import RuntimeSettings, Settings  # noqa: E402
from bot.ops.pg_notify import asyncpg_dsn  # noqa: E402
from bot.ops.settings_sync import CHANNEL, SettingsSync, notifier_for  # noqa: E402
from bot.store.engine.database import Database  # noqa: E402
from bot.store.repos.app_settings import AppSettingsRepository  # noqa: E402
from bot.utils.tasks import BackgroundTasks  # noqa: E402
from tests.fakes.postgres import temp_postgres  # noqa: E402


@asynccontextmanager
async def _process(url: str, settings: Settings) -> AsyncIterator[RuntimeSettings]:
    """One process's runtime settings and their sync over the database at `url`."""
    async with AsyncExitStack() as stack:
        db = await Database.connect(url)
        stack.push_async_callback(db.close)
        runtime = RuntimeSettings(settings, AppSettingsRepository(db))
        await runtime.load()
        tasks = BackgroundTasks()
        stack.push_async_callback(tasks.close)
        sync = SettingsSync(runtime, tasks, notifier=notifier_for(url))
        await sync.start()
        stack.push_async_callback(sync.stop)
        yield runtime


async def _seen_after(one: RuntimeSettings, two: RuntimeSettings, value: int) -> float:
    """Seconds from `one`'s change being stored to `two` serving it."""
    started = time.perf_counter()
    await one.update({"user_cooldown_seconds": value})
    while two().user_cooldown_seconds != value:
        await asyncio.sleep(0.001)
        if time.perf_counter() - started > 60:
            raise TimeoutError("the change never showed")
    return time.perf_counter() - started


async def _run(url: str, rounds: int, flood: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(_env_file=None, db_path=Path(tmp) / "unused.db")  # type: ignore[call-arg]
        async with _process(url, settings) as one, _process(url, settings) as two:
            quiet = [await _seen_after(one, two, 10 + n) for n in range(rounds)]
            flooded = []
            for n in range(rounds):
                sender = await asyncpg.connect(asyncpg_dsn(url))
                try:
                    # Distinct payloads: PostgreSQL folds identical ones within a transaction.
                    await sender.execute(
                        "SELECT pg_notify($1, g::text) FROM generate_series(1, $2::int) g",
                        CHANNEL,
                        flood,
                    )
                finally:
                    await sender.close()
                flooded.append(await _seen_after(one, two, 100 + n))
    return {
        "rounds": rounds,
        "flood": flood,
        "quiet_ms": [round(s * 1000, 1) for s in quiet],
        "flooded_ms": [round(s * 1000, 1) for s in flooded],
        "quiet_ms_p50": round(statistics.median(quiet) * 1000, 1),
        "flooded_ms_p50": round(statistics.median(flooded) * 1000, 1),
        "flooded_ms_max": round(max(flooded) * 1000, 1),
    }


def main() -> None:
    """Start a temporary PostgreSQL, run the rounds, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--flood", type=int, default=20000)
    args = parser.parse_args()
    with temp_postgres() as server:
        result = asyncio.run(_run(server.create_database("flood"), args.rounds, args.flood))
    print(json.dumps(result))
    print(
        f"settings_flood: a change shows in the other process after {result['flooded_ms_p50']} ms "
        f"(max {result['flooded_ms_max']}) behind {args.flood} notifications; "
        f"{result['quiet_ms_p50']} ms without"
    )


if __name__ == "__main__":
    main()
