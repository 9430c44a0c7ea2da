"""Overspend of a daily token budget under concurrency: 2 processes over one PostgreSQL.

Two worker processes open PlayChat's services over one temporary PostgreSQL database (each its
own connection pool, as two shard processes have) and the loopback LLM; once both are ready,
each starts its turns at once (20 in all by default, every turn a different member of one
server) against SERVER_DAILY_TOKENS. The LLM answers every call with the same reported counts,
slowly enough that the calls overlap. Reports what the LLM received (the admitted calls), the
tokens counted, and the overspend in tokens (used − budget) and in requests (admitted calls
beyond the most whose cost fits in the budget). Prints one JSON object and a one-line summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.chat.engine import TurnRequest  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.services import open_services  # noqa: E402
from bot.store.engine.database import Database  # noqa: E402
from bot.store.repos.token_usage import TokenUsageRepository  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer, Text  # noqa: E402
from tests.fakes.postgres import temp_postgres  # noqa: E402

GUILD = "guild:900000000000000001"
PROMPT, COMPLETION = 250, 50


def _settings(url: str, llm: str, budget: int, kb: Path, window: int) -> Settings:
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=url,
        llm_model="ollama/bench",
        llm_api_base=llm,
        kb_dir=kb,
        llm_context_tokens=window,
        server_daily_tokens=budget,
        memory_summarize_threshold=1000,
    )


async def _worker(args: argparse.Namespace) -> None:
    """One process: open services, say ready, wait for 'go', run its turns at once."""
    kb = Path(tempfile.mkdtemp(prefix="budget-kb-"))
    settings = _settings(args.url, args.llm, args.budget, kb, args.window)
    async with open_services(settings) as services:
        await services.repos.spaces.ensure(GUILD)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

        async def turn(n: int) -> bool:
            member = str(10_000 + args.index * 1000 + n)
            request = TurnRequest("hi", space_id=GUILD, author_id=member, source="discord")
            events = [event async for event in services.engine.run_turn(request)]
            return type(events[-1]).__name__ == "DoneEvent"

        done = await asyncio.gather(*(turn(n) for n in range(args.turns)))
        print(json.dumps({"answered": sum(done)}), flush=True)


async def _start(
    args: argparse.Namespace, url: str, llm: str, index: int
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--worker", "--url", url, "--llm", llm,
        "--budget", str(args.budget), "--turns", str(args.turns // 2), "--index", str(index),
        "--window", str(args.window),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


async def _run(args: argparse.Namespace) -> dict[str, object]:
    with temp_postgres() as server:
        url = server.create_database("budget")
        async with FakeLLMServer(models=("bench",)) as llm:
            llm.default_reply = Text(
                "ok", delay=args.delay, prompt_tokens=PROMPT, completion_tokens=COMPLETION
            )
            workers = [await _start(args, url, llm.url, index) for index in range(2)]
            for worker in workers:
                assert worker.stdout is not None
                assert (await worker.stdout.readline()).strip() == b"ready"
            for worker in workers:
                assert worker.stdin is not None
                worker.stdin.write(b"go\n")
                await worker.stdin.drain()
            outputs = [json.loads(await w.stdout.readline()) for w in workers if w.stdout]
            for worker in workers:
                await worker.wait()
            admitted = len(llm.chat_requests)
        db = await Database.connect(url)
        try:
            rows = await TokenUsageRepository(db).on_day(GUILD, (await _day(db)))
        finally:
            await db.close()
    total = next(row for row in rows if row.member_id is None)
    fits = args.budget // (PROMPT + COMPLETION)
    return {
        "processes": 2,
        "turns": args.turns,
        "budget_tokens": args.budget,
        "tokens_per_call": PROMPT + COMPLETION,
        "llm_window": args.window,
        "admitted_calls": admitted,
        "answered_turns": sum(int(out["answered"]) for out in outputs),
        "used_tokens": total.used,
        "left_reserved": total.reserved,
        "overspend_tokens": max(0, total.used - args.budget),
        "overspend_requests": max(0, admitted - fits),
    }


async def _day(db: Database) -> str:
    rows = await db.fetchall("SELECT day FROM token_usage WHERE space_id = ?", (GUILD,))
    return str(rows[0]["day"])


def main() -> None:
    """Run the benchmark (or, with --worker, one of its processes)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--budget", type=int, default=1_000)
    parser.add_argument("--window", type=int, default=2_048, help="LLM_CONTEXT_TOKENS")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per LLM answer")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--llm", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(_worker(args))
        return
    result = asyncio.run(_run(args))
    print(json.dumps(result))
    print(
        f"{result['turns']} concurrent turns on 2 processes, budget {args.budget} tokens: "
        f"{result['admitted_calls']} calls admitted, {result['used_tokens']} tokens used, "
        f"overspend {result['overspend_tokens']} tokens / {result['overspend_requests']} requests"
    )


if __name__ == "__main__":
    main()
