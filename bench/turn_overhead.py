"""Engine overhead per turn against an instantly answering fake LLM, on a 100k-message DB.

Prints one JSON object and a one-line summary. Targets (issue 1): p50 ≤ 5 ms, p99 ≤ 20 ms
engine overhead (LLM time excluded), 1 LLM request per tool-less turn, ready ≤ 1.5 s and
idle RSS ≤ 150 MiB with the default Ollama configuration.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
SPACE = "local:local"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.chat.engine import TurnRequest  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.llm.backend import ChatBackend  # noqa: E402
from bot.llm.gateway import default_backend_factory  # noqa: E402
from bot.llm.types import Completion, Message, StreamDelta, ToolSchema  # noqa: E402
from bot.services import ServiceOptions, open_services  # noqa: E402
from bot.store.engine.database import Database  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer, Text  # noqa: E402

SESSIONS = 1000
MESSAGES_PER_SESSION = 100
LIVE_PER_SESSION = 10
TURNS = 400


class TimedBackend:
    """Wraps a real backend and adds up the time spent inside LLM calls (embeddings too)."""

    def __init__(self, inner: ChatBackend) -> None:
        self.inner = inner
        self.llm_seconds = 0.0

    async def stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        ctx: int,
        *,
        max_tokens: int | None = None,
    ) -> AsyncIterator[StreamDelta]:
        start = time.perf_counter()
        try:
            async for delta in self.inner.stream(
                model, messages, tools, ctx, max_tokens=max_tokens
            ):
                yield delta
        finally:
            self.llm_seconds += time.perf_counter() - start

    async def complete(
        self, model: str, messages: list[Message], ctx: int, *, max_tokens: int | None = None
    ) -> Completion:
        return await self.inner.complete(model, messages, ctx, max_tokens=max_tokens)

    async def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        start = time.perf_counter()
        try:
            return await self.inner.embed(model, texts)
        finally:
            self.llm_seconds += time.perf_counter() - start

    async def list_models(self) -> list[str]:
        return await self.inner.list_models()

    async def close(self) -> None:
        await self.inner.close()


def prefill(path: Path) -> list[str]:
    """1,000 sessions × 100 messages; all but the last 10 of each archived under a summary."""
    conn = sqlite3.connect(path)
    now = "2026-01-01T00:00:00+00:00"
    ids = [f"s{n:05d}" for n in range(SESSIONS)]
    conn.executemany(
        "INSERT INTO sessions (id, space_id, title, source, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [(sid, SPACE, sid, "bench", now, now) for sid in ids],
    )
    conn.executemany(
        "INSERT INTO memories (id, space_id, session_id, summary, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (n + 1, SPACE, sid, f"summary of {sid}: earlier talk about topic {n}", now)
            for n, sid in enumerate(ids)
        ],
    )
    rows = []
    for n, sid in enumerate(ids):
        for m in range(MESSAGES_PER_SESSION):
            archived = m < MESSAGES_PER_SESSION - LIVE_PER_SESSION
            rows.append(
                (
                    SPACE,
                    sid,
                    "user" if m % 2 == 0 else "assistant",
                    f"message {m} of {sid}: " + "lorem ipsum dolor sit amet " * 4,
                    now if archived else None,
                    n + 1 if archived else None,
                    now,
                )
            )
    conn.executemany(
        "INSERT INTO messages (space_id, session_id, role, content, archived_at, memory_id, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.commit()
    conn.close()
    return ids


def startup_probe(db_path: Path) -> dict[str, float]:
    """Process start → services ready (bot + discord imported), and RSS at that point."""
    code = (
        "import time, os, asyncio\n"
        "import bot.__main__, bot.services\n"
        "try:\n    import bot.bot\nexcept ImportError:\n    import discord\n"
        "from bot.config import Settings\n"
        "async def main():\n"
        "    async with bot.services.open_services(Settings(_env_file=None)) as s:\n"
        "        rss = int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0])\n"
        "        print('READY', rss, flush=True)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "DB_PATH": str(db_path), "PYTHONPATH": str(REPO)}
    env.pop("LLM_MODEL", None)
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout
        elapsed = time.perf_counter() - start
        rss_kib = int(out.split("READY")[1].split()[0])
        runs.append((elapsed, rss_kib / 1024))
    return {
        "ready_s": round(statistics.median(r[0] for r in runs), 3),
        "idle_rss_mib": round(statistics.median(r[1] for r in runs), 1),
    }


async def measure(tmp: Path) -> dict[str, object]:
    db_path = tmp / "bench.db"
    await (await Database.open(db_path)).close()
    start = time.perf_counter()
    ids = prefill(db_path)
    prefill_s = time.perf_counter() - start

    timed: list[TimedBackend] = []

    def factory(kind: str, base: str, timeout: float, key: str) -> ChatBackend:
        backend = TimedBackend(default_backend_factory(kind, base, timeout, key))
        timed.append(backend)
        return backend

    async with FakeLLMServer() as llm:
        llm.default_reply = Text("ok, noted.", chunks=3)
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            db_path=db_path,
            llm_model="ollama/bench",
            llm_api_base=llm.url,
            kb_dir=tmp / "kb",
            memory_summarize_threshold=1000,  # the maximum: no summary during the run
        )
        rng = random.Random(7)
        overheads: list[float] = []
        async with open_services(settings, ServiceOptions(backend_factory=factory)) as services:
            for turn in range(TURNS + 20):
                session_id = rng.choice(ids)
                before_llm = sum(b.llm_seconds for b in timed)
                t0 = time.perf_counter()
                async for _ in services.engine.run_turn(
                    TurnRequest(f"bench question {turn}", session_id=session_id, space_id=SPACE)
                ):
                    pass
                wall = time.perf_counter() - t0
                llm_time = sum(b.llm_seconds for b in timed) - before_llm
                await services.tasks.drain()
                if turn >= 20:  # warm-up excluded
                    overheads.append((wall - llm_time) * 1000)
        requests = len(llm.chat_requests)
    overheads.sort()
    return {
        "turns": TURNS,
        "db_messages": SESSIONS * MESSAGES_PER_SESSION,
        "prefill_s": round(prefill_s, 2),
        "overhead_ms_p50": round(statistics.median(overheads), 3),
        "overhead_ms_p99": round(overheads[int(len(overheads) * 0.99) - 1], 3),
        "llm_requests_per_turn": round(requests / (TURNS + 20), 3),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        **startup_probe(tmp / "startup.db"),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(measure(Path(tmp)))
    print(json.dumps(result))
    print(
        f"turn_overhead: p50 {result['overhead_ms_p50']} ms, p99 {result['overhead_ms_p99']} ms "
        f"(targets 5/20), {result['llm_requests_per_turn']} LLM req/turn, "
        f"ready {result['ready_s']} s (≤1.5), idle RSS {result['idle_rss_mib']} MiB (≤150), "
        f"peak RSS {result['peak_rss_mib']} MiB"
    )


if __name__ == "__main__":
    main()
