"""Where a Discord turn's CPU goes: cProfile of the cold first turn and of warm turns.

Same set-up as `discord_turn.py` (the real bot in this process, the loopback Discord and LLM
in a child process). cProfile sees the event loop's thread only; the CPU of every thread of
this process (the loop, aiosqlite's, the analyzer's) is read from /proc and reported too, so
work moved off the loop still shows.

`--clock cpu` times functions by the loop thread's CPU clock (`time.thread_time`) instead of
the wall clock, so waiting (for the LLM stream, for a thread hop) costs nothing and the
entries add up to the CPU a turn spends on the loop.

Run: .venv/bin/python bench/profile_turn.py [--turns 10] [--top 15] [--sort tottime]
     [--clock wall|cpu]
Prints one JSON object, then a one-line summary (add --print-stats for pstats tables on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.discord_turn import one_turn, running_bot
from bot.runtime import event_loop

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of each live thread of this process, by thread name."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        name = names.get(int(task.name), "other")
        name = name.split("_")[0] if name.startswith("ThreadPoolExecutor") else name
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return out


def top_entries(profile: cProfile.Profile, turns: int, sort: str, top: int) -> list[dict[str, Any]]:
    """The `top` functions by `sort` (tottime or cumulative), in ms per turn."""
    stats = pstats.Stats(profile)
    rows = []
    for (file, line, name), (_cc, calls, tottime, cumtime, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": f"{_short(file)}:{line}({name})",
                "calls_per_turn": round(calls / turns, 1),
                "tottime_ms": round(tottime * 1000 / turns, 2),
                "cumtime_ms": round(cumtime * 1000 / turns, 2),
            }
        )
    key = "tottime_ms" if sort == "tottime" else "cumtime_ms"
    rows.sort(key=lambda row: row[key], reverse=True)
    return rows[:top]


def _short(file: str) -> str:
    for marker in ("site-packages/", "/lib/python3", "/bot/", "/bench/", "/tests/"):
        if marker in file:
            return marker.strip("/") + "/" + file.split(marker, 1)[1]
    return file


def _delta(after: dict[str, float], before: dict[str, float], turns: int) -> dict[str, float]:
    return {
        name: round((cpu - before.get(name, 0.0)) * 1000 / turns, 2)
        for name, cpu in sorted(after.items(), key=lambda item: -item[1])
        if cpu - before.get(name, 0.0) > 0
    }


def new_profile(clock: str) -> cProfile.Profile:
    """A profiler on the wall clock (cProfile's default) or on this thread's CPU clock."""
    return cProfile.Profile(time.thread_time) if clock == "cpu" else cProfile.Profile()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    """Profile the first turn after start, then `args.turns` warm turns."""
    async with running_bot(args) as harness:
        control = harness.control
        cold_profile = new_profile(args.clock)
        threads, cpu = thread_cpu(), time.process_time()
        cold_profile.enable()
        cold = await one_turn(control, 0, args.tokens)
        await harness.services.tasks.drain()
        cold_profile.disable()
        cold_cpu = time.process_time() - cpu
        cold_threads = _delta(thread_cpu(), threads, 1)
        await one_turn(control, 1, args.tokens)  # not profiled: settles any leftovers
        await harness.services.tasks.drain()
        warm_profile = new_profile(args.clock)
        threads, cpu = thread_cpu(), time.process_time()
        warm_profile.enable()
        for i in range(args.turns):
            await one_turn(control, 2 + i, args.tokens)
            await harness.services.tasks.drain()
        warm_profile.disable()
        warm_cpu = time.process_time() - cpu
        warm_threads = _delta(thread_cpu(), threads, args.turns)
    if args.print_stats:
        for title, profile in (("cold", cold_profile), ("warm", warm_profile)):
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats(args.sort).print_stats(args.top)
            print(f"===== {title} turn(s), by {args.sort}\n{text.getvalue()}", file=sys.stderr)
    return {
        "event_loop": event_loop.loop_name(asyncio.get_running_loop()),
        "tokens_per_reply": args.tokens,
        "clock": args.clock,
        "sort": args.sort,
        "cold_first_reply_ms": round(cold["first_reply_ms"], 1),
        "cold_cpu_ms": round(cold_cpu * 1000, 1),
        "cold_cpu_ms_by_thread": cold_threads,
        "cold_top": top_entries(cold_profile, 1, args.sort, args.top),
        "warm_turns": args.turns,
        "warm_cpu_ms_per_reply": round(warm_cpu * 1000 / args.turns, 1),
        "warm_cpu_ms_by_thread": warm_threads,
        "warm_top": top_entries(warm_profile, args.turns, args.sort, args.top),
    }


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=10, help="warm turns profiled")
    parser.add_argument("--top", type=int, default=15, help="entries listed")
    parser.add_argument("--sort", choices=("tottime", "cumulative"), default="tottime")
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall", help="profiler clock (cpu: thread CPU)"
    )
    parser.add_argument("--tokens", type=int, default=60, help="tokens per answer")
    parser.add_argument("--rate", type=float, default=50.0, help="LLM tokens per second")
    parser.add_argument("--interval", type=float, default=1.2, help="stream_edit_interval")
    parser.add_argument(
        "--event-loop",
        choices=("auto", "uvloop", "asyncio"),
        default="auto",
        help="the bot's event loop (auto: as python -m bot picks it)",
    )
    parser.add_argument("--print-stats", action="store_true", help="pstats tables on stderr")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _args()
    result = event_loop.run(main(arguments), arguments.event_loop)
    print(json.dumps(result))
    hottest = result["warm_top"][0]["function"] if result["warm_top"] else "-"
    print(
        f"profile_turn: cold first text {result['cold_first_reply_ms']} ms, "
        f"{result['cold_cpu_ms']} ms CPU; warm {result['warm_cpu_ms_per_reply']} ms CPU per "
        f"reply ({', '.join(f'{k} {v}' for k, v in result['warm_cpu_ms_by_thread'].items())}); "
        f"top by {arguments.sort} ({arguments.clock} clock): {hottest}"
    )
