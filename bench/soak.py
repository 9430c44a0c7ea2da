"""Soak: does a long-running process grow? RSS after 10,000 turns against RSS after 100.

The real services (engine, SQLite, tagging, word pool, summaries) run in this process; the
loopback LLM runs in a child process (the fakes of `discord_turn.py`, answering fast), so its
own request log does not count. Turns go to many sessions at once, new sessions keep
appearing (as new threads do), and every hook runs. RSS is read after the background work of
each checkpoint has drained and a full collection has run.

Run: .venv/bin/python bench/soak.py [--turns 10000] [--concurrency 16] [--per-session 12]
Prints one JSON object, then a one-line summary.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

from bench.discord_turn import Control
from bot.chat.engine import TurnRequest
from bot.config import Settings
from bot.llm.gateway import RetryPolicy
from bot.runtime import event_loop
from bot.services import ServiceOptions, Services, open_services
from bot.turn.events import DoneEvent

SPACE = "local:soak"
LIMIT_MIB = 20.0


def rss_mib() -> float:
    """This process's resident set size."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


async def one_turn(services: Services, index: int, lanes: int, per_session: int) -> bool:
    """Turn `index`; True when it completed.

    Lane index % lanes runs its sessions one after another, `per_session` turns each, so the
    turns of one batch are in different sessions (as replies in different threads are).
    """
    lane, step = index % lanes, index // lanes
    request = TurnRequest(
        f"what about topic {index % 97} and the weather today, question {index}",
        session_id=f"soak-{lane}-{step // per_session}",
        space_id=SPACE,
    )
    done = False
    async for event in services.engine.run_turn(request):
        done = done or isinstance(event, DoneEvent)
    return done


async def checkpoint(services: Services) -> float:
    """RSS once background work has finished and garbage is collected."""
    await services.tasks.drain()
    gc.collect()
    return round(rss_mib(), 1)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """The soak; returns the JSON result."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__).with_name("discord_turn.py")),
        "--serve-fakes",
        "--tokens",
        str(args.tokens),
        "--rate",
        "100000",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdin is not None
    port = int((await asyncio.wait_for(child.stdout.readline(), 60)).decode())
    scratch = tempfile.TemporaryDirectory(prefix="playchat-soak-")
    tmp = Path(scratch.name)
    marks: dict[int, float] = {}
    failed = 0
    began = time.monotonic()
    try:
        async with aiohttp.ClientSession() as http:
            info = await Control(http, port).call("GET", "/info")
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            db_path=tmp / "soak.db",
            kb_dir=tmp / "kb",
            language="en",
            llm_model="ollama/bench-model",
            llm_api_base=info["llm_url"],
            memory_summarize_threshold=args.per_session - 2,
        )
        options = ServiceOptions(retry=RetryPolicy(attempts=1), builtin_tools=False)
        async with open_services(settings, options) as services:
            done = 0
            for mark in sorted({100, *range(1000, args.turns + 1, 1000), args.turns}):
                while done < mark:
                    batch = range(done, min(mark, done + args.concurrency))
                    results = await asyncio.gather(
                        *(one_turn(services, i, args.concurrency, args.per_session) for i in batch)
                    )
                    failed += results.count(False)
                    done = batch.stop
                marks[mark] = await checkpoint(services)
    finally:
        child.stdin.close()
        await asyncio.wait_for(child.wait(), 30)
        scratch.cleanup()
    growth = marks[args.turns] - marks[100]
    return {
        "event_loop": event_loop.loop_name(asyncio.get_running_loop()),
        "turns": args.turns,
        "concurrency": args.concurrency,
        "turns_per_session": args.per_session,
        "failed_turns": failed,
        "wall_s": round(time.monotonic() - began, 1),
        "rss_mib_after_100": marks[100],
        f"rss_mib_after_{args.turns}": marks[args.turns],
        "rss_mib_by_turns": marks,
        "growth_mib": round(growth, 1),
        "limit_mib": LIMIT_MIB,
        "within_limit": growth <= LIMIT_MIB,
    }


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=10_000, help="turns in all")
    parser.add_argument("--concurrency", type=int, default=16, help="turns at once")
    parser.add_argument("--per-session", type=int, default=12, help="turns per session")
    parser.add_argument("--tokens", type=int, default=12, help="tokens per answer")
    parser.add_argument(
        "--event-loop",
        choices=("auto", "uvloop", "asyncio"),
        default="auto",
        help="the bot's event loop (auto: as python -m bot picks it)",
    )
    arguments = parser.parse_args()
    if arguments.turns < 100:
        parser.error("--turns must be at least 100")
    return arguments


if __name__ == "__main__":
    arguments = _args()
    result = event_loop.run(run(arguments), arguments.event_loop)
    print(json.dumps(result))
    turns = result["turns"]
    print(
        f"soak: {turns} turns in {result['wall_s']} s ({result['failed_turns']} failed); "
        f"RSS {result['rss_mib_after_100']} MiB after 100 -> "
        f"{result[f'rss_mib_after_{turns}']} MiB after {turns}: "
        f"+{result['growth_mib']} MiB (limit {LIMIT_MIB}) "
        f"{'OK' if result['within_limit'] else 'OVER'}"
    )
