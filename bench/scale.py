"""Turns per second and p95 first visible token: one bot process vs two (shards), one database.

Real `python -m bot` processes (as tests/sharding runs them) on the loopback Discord with four
servers over 2 shards, and the loopback LLM streaming the same answer (`--tokens` words,
`--delay` s between them) for every turn. "one": one process serving both shards; "two": two
processes, shard 0 and shard 1, on one shared database — both modes on a SQLite file (WAL) and
on PostgreSQL (a temporary local cluster from tests/fakes/postgres.py, durability off like the
test cluster, a fresh database per mode). Each round sends `--turns`
mentions at once, spread over the servers and over many users (each opens a thread); a turn's
first visible token is the bot's first message in its thread, measured from the moment the
message was sent; a turn is done when that message shows the whole answer. turns/s is turns
over the time from the first message sent to the last answer shown.

The fakes run in this process, so on a small machine they compete with the bots for CPU —
equally in both modes. Without PostgreSQL's server binaries the JSON says why under
"postgresql" and the summary says "postgresql: not available".

Run: .venv/bin/python bench/scale.py [--turns 40] [--rounds 2] [--tokens 40] [--delay 0.01]
Prints one JSON object, then a one-line summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.store.engine.dialect import sqlite_url
from tests.fakes.discord_models import FakeUser
from tests.fakes.discord_server import FakeDiscord, FakeGuild, FakeMessage
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.fakes.postgres import SKIP_REASON, find_bin_dir, temp_postgres
from tests.sharding.processes import SharedDatabase, bot_process, wait_ready

SERVERS = 4
WAIT = 300.0


def _env(llm: FakeLLMServer, shard_ids: str) -> dict[str, str]:
    return {
        "SHARD_COUNT": "2",
        "SHARD_IDS": shard_ids,
        "LLM_MODEL": "ollama/bench-model",
        "LLM_API_BASE": llm.url,
        "STREAM_EDIT_INTERVAL": "0.5",
        "USER_COOLDOWN_SECONDS": "0",
        "USER_MAX_CONCURRENT_TURNS": "100",
        "LOG_LEVEL": "WARNING",
    }


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, round(0.95 * len(ordered)) - 1)]


async def _round(
    server: FakeDiscord, guilds: list[FakeGuild], users: list[FakeUser], turns: int, answer: str
) -> dict[str, Any]:
    """Send `turns` mentions at once; the first-token and done times of each."""
    bot_id = server.bot_user.id

    def first(message: FakeMessage) -> FakeMessage | None:
        return next((m for m in server.messages_in(message.id) if m.author.id == bot_id), None)

    async def one(i: int) -> tuple[float, float]:
        guild = guilds[i % len(guilds)]
        channel = server.guild_channels(guild.id)[0].id
        sent_at = time.perf_counter()
        message = await server.inject_message(
            f"question {i}", author=users[i % len(users)], channel_id=channel
        )
        await server.wait_for(lambda: first(message), WAIT)
        visible = time.perf_counter() - sent_at
        await server.wait_for(
            lambda: any(m.content == answer for m in server.messages_in(message.id)), WAIT
        )
        return visible, time.perf_counter()

    started = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(turns)))
    elapsed = max(done for _, done in results) - started
    firsts = [visible for visible, _ in results]
    return {
        "turns": turns,
        "seconds": round(elapsed, 3),
        "turns_per_s": round(turns / elapsed, 2),
        "first_token_p50_ms": round(statistics.median(firsts) * 1000, 1),
        "first_token_p95_ms": round(p95(firsts) * 1000, 1),
    }


# A new empty shared database for a mode, given the mode's scratch directory.
DatabaseMaker = Callable[[Path], SharedDatabase]


def _sqlite(root: Path) -> SharedDatabase:
    return SharedDatabase(sqlite_url(root / "playchat.db"), root)


async def _mode(
    processes: list[str], args: argparse.Namespace, answer: str, new_db: DatabaseMaker
) -> dict[str, Any]:
    """One mode (the shard ids of each process): a warm-up round, then the measured ones."""
    with tempfile.TemporaryDirectory(prefix="playchat-scale-") as tmp:
        root = Path(tmp)
        shared = new_db(root)
        async with FakeLLMServer() as llm, FakeDiscord(shards=2) as server:
            llm.default_reply = Text(answer, delay=args.delay)
            guilds = [server.add_guild(f"server {i}", shard=i % 2) for i in range(SERVERS)]
            users = [
                server.add_user(f"user {i}", guild_id=guilds[i % SERVERS].id)
                for i in range(args.turns)
            ]
            async with AsyncExitStack() as stack:
                for shard_ids in processes:
                    env = _env(llm, shard_ids)
                    await stack.enter_async_context(bot_process(server, shared, root, **env))
                await wait_ready(server, guilds)
                await _round(server, guilds, users, min(8, args.turns), answer)  # warm-up
                rounds = [
                    await _round(server, guilds, users, args.turns, answer)
                    for _ in range(args.rounds)
                ]
    best = max(rounds, key=lambda r: r["turns_per_s"])
    firsts = [r["first_token_p95_ms"] for r in rounds]
    return {
        "processes": len(processes),
        "turns_per_s": best["turns_per_s"],
        "first_token_p95_ms": max(firsts),
        "rounds": rounds,
    }


async def _modes(args: argparse.Namespace, answer: str, new_db: DatabaseMaker) -> dict[str, Any]:
    return {
        "one": await _mode(["0,1"], args, answer, new_db),
        "two": await _mode(["0", "1"], args, answer, new_db),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    """Both modes on SQLite, then on PostgreSQL (when its server binaries are installed)."""
    load_before = [round(x, 2) for x in os.getloadavg()]
    answer = " ".join(f"word{i}" for i in range(args.tokens))
    sqlite = await _modes(args, answer, _sqlite)
    postgresql: dict[str, Any] | str = f"not available: {SKIP_REASON}"
    if find_bin_dir() is not None:
        with ExitStack() as stack:
            cluster = stack.enter_context(temp_postgres())
            postgresql = await _modes(
                args, answer, lambda root: SharedDatabase(cluster.create_database("scale"), root)
            )
    return {
        "load_average_before": load_before,
        "machine_cpus": os.cpu_count(),
        "servers": SERVERS,
        "turns_per_round": args.turns,
        "tokens": args.tokens,
        "token_delay_s": args.delay,
        "sqlite": sqlite,
        "postgresql": postgresql,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=40, help="turns sent at once per round")
    parser.add_argument("--rounds", type=int, default=2, help="measured rounds per mode")
    parser.add_argument("--tokens", type=int, default=40, help="words in each streamed answer")
    parser.add_argument("--delay", type=float, default=0.01, help="seconds between words")
    return parser.parse_args(argv)


def _engine_summary(name: str, modes: dict[str, Any] | str) -> str:
    if isinstance(modes, str):
        return f"{name}: not available"
    one, two = modes["one"], modes["two"]
    return (
        f"{name}: one process {one['turns_per_s']} turns/s, p95 first token "
        f"{one['first_token_p95_ms']} ms; two {two['turns_per_s']} turns/s, p95 "
        f"{two['first_token_p95_ms']} ms"
    )


def summary(result: dict[str, Any]) -> str:
    """The one-line summary of a run."""
    load = "/".join(str(x) for x in result["load_average_before"])
    return (
        f"scale ({result['turns_per_round']} turns at once, {result['machine_cpus']} CPUs, "
        f"load {load}): {_engine_summary('SQLite', result['sqlite'])}; "
        f"{_engine_summary('PostgreSQL', result['postgresql'])}"
    )


if __name__ == "__main__":
    result = asyncio.run(main(_parse(None)))
    print(json.dumps(result, indent=2))
    print(summary(result))
