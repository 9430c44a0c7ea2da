"""Context assembly cost with every memory layer full, at ×1, ×10 and ×100 of its data.

×1 (bench/context_data.py): 200 notes, 500 KB files, 1,000 summaries, 50 knowledge entries,
10,000 past messages of the space (recall's word index filled) and 200 member facts; ×N has N
times each. Every scale's bot is opened at once and the rounds alternate between scales
(`--repeat` passes of `--rounds` turns each), so the figures side by side come from the same
minutes of a shared machine.

Per scale: context assembly p50/p99 (the query embedding, against the loopback LLM, measured
and subtracted); the process CPU time of a build (all threads, the loopback LLM's embedding
included: steadier than wall time on a loaded machine); each layer's own draft p50 (alone,
embedding subtracted); what the related-memories layer adds to a whole build (builds with and
without it, alternated: the difference of their p50s, wall and CPU); and the longest hold of
the event loop during the turns: the longest single callback, in wall time and in this
thread's CPU time (the CPU figure is what the code holds; wall adds preemption by other work on
a shared machine), and the longest garbage collection among them (a pause inside whichever
callback triggered it). One build per pass re-reads the notes outline, as a turn does every
30 s. Also the Janome messages per second (see bench/janome_rate.py).
The start-up heap is frozen once each bot is open, as the bot does (`bot.runtime.heap`).

Run: .venv/bin/python bench/context.py [--scale 1,10,100] [--rounds 200] [--repeat 1]
(`--scale` alone is 1,10,100). Prints one JSON object and a one-line summary.
Targets (issue 29): p50 ≤ 10 ms, p99 ≤ 20 ms at ×10; ×100 at most twice ×10; no loop hold
over 5 ms. Issue 28: the related-memories layer adds ≤ 3 ms p50.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.context_data import MEMBER, SESSION, SPACE, Scale, prefill, write_kb  # noqa: E402
from bench.janome_rate import chat_lines  # noqa: E402
from bench.turn_overhead import TimedBackend  # noqa: E402
from bot.chat.context import MEMORY_LAYER, ContextBuilder, ContextRequest  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.llm.backend import ChatBackend  # noqa: E402
from bot.llm.gateway import default_backend_factory  # noqa: E402
from bot.memory import notes as notes_module  # noqa: E402
from bot.memory.japanese import InProcessAnalyzer  # noqa: E402
from bot.runtime.heap import frozen_start_up_heap  # noqa: E402
from bot.services import ServiceOptions, Services, open_services  # noqa: E402
from bot.store.engine.database import Database  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer  # noqa: E402

QUERY = "tell me about kyoto tea and the ramen place near the station"
WARMUP = 10
LAYER_ROUNDS = 30


class LoopHolds:
    """The longest single event-loop callback while `recording`, in wall and CPU time."""

    def __init__(self) -> None:
        self.recording = False
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.worst = ""
        self.gc: list[float] = []
        self._gc_started = 0.0

    def _gc_phase(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self.recording:
            self.gc.append(time.perf_counter() - self._gc_started)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Time every callback the loop runs (asyncio.Handle._run) and every garbage
        collection while inside."""
        handle_run = asyncio.events.Handle._run
        probe = self
        gc.callbacks.append(self._gc_phase)

        def timed_run(handle: asyncio.Handle) -> None:
            if not probe.recording:
                handle_run(handle)
                return
            wall, cpu = time.perf_counter(), time.thread_time()
            handle_run(handle)
            cpu = time.thread_time() - cpu
            probe.wall.append(time.perf_counter() - wall)
            if not probe.cpu or cpu > max(probe.cpu):
                probe.worst = repr(handle)[:160]
            probe.cpu.append(cpu)

        asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
        try:
            yield
        finally:
            asyncio.events.Handle._run = handle_run  # type: ignore[method-assign]
            gc.callbacks.remove(self._gc_phase)


@dataclass
class Bot:
    """One scale's open services and what was measured on it."""

    scale: Scale
    services: Services
    request: ContextRequest
    timed: list[TimedBackend]
    sync_s: float
    costs: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    holds_wall: list[float] = field(default_factory=list)
    holds_cpu: list[float] = field(default_factory=list)
    gc_pauses: list[float] = field(default_factory=list)
    worst_hold: str = ""
    layers: dict[str, float] = field(default_factory=dict)
    layer_tokens: dict[str, int] = field(default_factory=dict)
    related_adds: dict[str, float] = field(default_factory=dict)

    def embed_seconds(self) -> float:
        """LLM time (the query embeddings) so far."""
        return sum(backend.llm_seconds for backend in self.timed)


async def open_bot(stack: contextlib.AsyncExitStack, tmp: Path, scale: Scale, url: str) -> Bot:
    """Build ×N's data and open a bot on it; its first KB sync is timed."""
    root = tmp / f"x{scale.factor}"
    kb_dir = root / "kb"
    kb_dir.mkdir(parents=True)
    db_path = root / "bench.db"
    await (await Database.open(db_path)).close()
    prefill(db_path, scale)
    write_kb(kb_dir, scale)
    timed: list[TimedBackend] = []

    def factory(kind: str, base: str, timeout: float, key: str) -> ChatBackend:
        backend = TimedBackend(default_backend_factory(kind, base, timeout, key))
        timed.append(backend)
        return backend

    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        db_path=db_path,
        kb_dir=kb_dir,
        llm_model="ollama/bench",
        llm_api_base=url,
        llm_context_tokens=8192,
    )
    services = await stack.enter_async_context(
        open_services(settings, ServiceOptions(backend_factory=factory))
    )
    # As `bot.ops.startup.started_services` does once the services are open (the KB's files
    # are read later, on the first search, in the bot as here).
    stack.enter_context(frozen_start_up_heap())
    message_id = int(await services.db.scalar("SELECT MAX(id) FROM messages"))
    request = ContextRequest(SPACE, SESSION, QUERY, message_id, settings, member_id=MEMBER)
    started = time.perf_counter()
    await services.local_kb.sync()
    return Bot(scale, services, request, timed, time.perf_counter() - started)


@contextlib.contextmanager
def outline_aged(aged: bool) -> Iterator[None]:
    """While `aged`, the notes outline is past its age limit: the build re-reads it, as a turn
    does every OUTLINE_CACHE_SECONDS (30 s; a bench pass is shorter)."""
    kept = notes_module.OUTLINE_CACHE_SECONDS
    if aged:
        notes_module.OUTLINE_CACHE_SECONDS = 0.0
    try:
        yield
    finally:
        notes_module.OUTLINE_CACHE_SECONDS = kept


async def turns(bot: Bot, holds: LoopHolds, rounds: int) -> None:
    """`rounds` context builds (after a warm-up), embedding time subtracted; the one in the
    middle re-reads the notes outline."""
    tools = bot.services.registry.schemas()
    for n in range(rounds + WARMUP):
        embed_before = bot.embed_seconds()
        holds.recording = n >= WARMUP
        start, cpu = time.perf_counter(), time.process_time()
        with outline_aged(n == WARMUP + rounds // 2):
            built = await bot.services.context.build(bot.request, tools=tools)
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu
        holds.recording = False
        if n >= WARMUP:
            bot.costs.append((wall - (bot.embed_seconds() - embed_before)) * 1000)
            bot.cpu.append(cpu * 1000)
            bot.layer_tokens = built.layer_tokens
    bot.holds_wall += holds.wall
    bot.holds_cpu += holds.cpu
    if holds.cpu and max(holds.cpu) >= max(bot.holds_cpu):
        bot.worst_hold = holds.worst
    bot.gc_pauses += holds.gc
    holds.wall, holds.cpu, holds.gc = [], [], []


def without_layer(bot: Bot, name: str) -> ContextBuilder:
    """The bot's context builder less the layer `name` (the same layer objects otherwise)."""
    layers = bot.services.context.layers
    cut = next(n for n, layer in enumerate(layers) if layer.name == MEMORY_LAYER)
    repos = bot.services.repos
    return ContextBuilder(
        repos.messages,
        repos.memories,
        layers[:cut],
        after_memory=[layer for layer in layers[cut + 1 :] if layer.name != name],
    )


async def related_adds(bot: Bot) -> None:
    """What the related-memories layer adds to a whole build: builds with and without it,
    alternated, LAYER_ROUNDS each; the difference of their p50s (wall, embedding subtracted;
    and process CPU)."""
    tools = bot.services.registry.schemas()
    builders = {"with": bot.services.context, "without": without_layer(bot, "related")}
    walls: dict[str, list[float]] = {"with": [], "without": []}
    cpus: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(LAYER_ROUNDS):
        for key, builder in builders.items():
            embed_before = bot.embed_seconds()
            start, cpu = time.perf_counter(), time.process_time()
            await builder.build(bot.request, tools=tools)
            cpus[key].append((time.process_time() - cpu) * 1000)
            wall = time.perf_counter() - start - (bot.embed_seconds() - embed_before)
            walls[key].append(wall * 1000)
    median = statistics.median
    bot.related_adds = {
        "wall_ms_p50": round(median(walls["with"]) - median(walls["without"]), 3),
        "cpu_ms_p50": round(median(cpus["with"]) - median(cpus["without"]), 3),
    }


async def layer_costs(bot: Bot) -> None:
    """Each layer's draft alone: p50 in ms over LAYER_ROUNDS, embedding subtracted."""
    for layer in bot.services.context.layers:
        costs = []
        for _ in range(LAYER_ROUNDS):
            embed_before = bot.embed_seconds()
            start = time.perf_counter()
            await layer.draft(bot.request)
            wall = time.perf_counter() - start
            costs.append((wall - (bot.embed_seconds() - embed_before)) * 1000)
        bot.layers[layer.name] = round(statistics.median(costs), 3)


def percentile(values: list[float], share: float) -> float:
    """The value at `share` of the sorted values (nearest rank)."""
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * share) - 1)]


def figures(bot: Bot) -> dict[str, Any]:
    """What one scale measured."""
    scale = bot.scale
    return {
        "notes": scale.notes,
        "kb_files": scale.kb_files,
        "summaries": scale.summaries,
        "knowledge": scale.knowledge,
        "messages": scale.messages,
        "member_facts": scale.members * 10,
        "rounds": len(bot.costs),
        "kb_first_sync_s": round(bot.sync_s, 2),
        "context_ms_p50": round(statistics.median(bot.costs), 3),
        "context_ms_p99": round(percentile(bot.costs, 0.99), 3),
        "context_cpu_ms_p50": round(statistics.median(bot.cpu), 3),
        "context_cpu_ms_p99": round(percentile(bot.cpu, 0.99), 3),
        "layer_ms_p50": bot.layers,
        "related_adds_ms_p50": bot.related_adds,
        "loop_hold_ms_max_wall": round(max(bot.holds_wall) * 1000, 3),
        "loop_hold_ms_max_cpu": round(max(bot.holds_cpu) * 1000, 3),
        "loop_hold_ms_p999_wall": round(percentile(bot.holds_wall, 0.999) * 1000, 3),
        "loop_hold_worst": bot.worst_hold,
        "gc_pause_ms_max": round(max(bot.gc_pauses, default=0.0) * 1000, 3),
        "layer_tokens": bot.layer_tokens,
    }


async def measure(tmp: Path, scales: list[Scale], rounds: int, repeat: int) -> dict[str, Any]:
    """Open every scale's bot, then alternate their rounds `repeat` times."""
    holds = LoopHolds()
    async with FakeLLMServer() as llm, contextlib.AsyncExitStack() as stack:
        bots = [await open_bot(stack, tmp, scale, llm.url) for scale in scales]
        with holds.installed():
            for _ in range(repeat):
                for bot in bots:
                    await turns(bot, holds, rounds)
        for bot in bots:
            await layer_costs(bot)
            await related_adds(bot)
    return {f"x{bot.scale.factor}": figures(bot) for bot in bots}


def janome_rate() -> int:
    """Janome nouns of chat lines per second, in process."""
    analyzer = InProcessAnalyzer()
    lines = chat_lines(600)
    analyzer.nouns(lines[0])
    start = time.perf_counter()
    for line in lines:
        analyzer.nouns(line)
    rate = len(lines) / (time.perf_counter() - start)
    analyzer.close()
    return round(rate)


def summary(result: dict[str, Any]) -> str:
    """The one-line summary."""
    parts = [
        f"{name}: p50 {r['context_ms_p50']} / p99 {r['context_ms_p99']} ms, "
        f"related alone {r['layer_ms_p50'].get('related')} ms, adds "
        f"{r['related_adds_ms_p50']['wall_ms_p50']} ms ({r['related_adds_ms_p50']['cpu_ms_p50']} "
        f"cpu), hold {r['loop_hold_ms_max_cpu']} ms cpu"
        for name, r in result["scales"].items()
    ]
    return (
        "context (embedding excluded; target ×10 p50 ≤ 10, p99 ≤ 20, ×100 ≤ 2 × ×10, "
        f"hold ≤ 5): {'; '.join(parts)}; Janome {result['janome_msgs_per_s']} msg/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", nargs="?", default="1", const="1,10,100")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    scales = [Scale(int(factor)) for factor in args.scale.split(",") if factor]
    with tempfile.TemporaryDirectory() as tmp:
        result = {
            "scales": asyncio.run(measure(Path(tmp), scales, args.rounds, args.repeat)),
            "repeat": args.repeat,
            "janome_msgs_per_s": janome_rate(),
        }
    print(json.dumps(result, ensure_ascii=False))
    print(summary(result))


if __name__ == "__main__":
    main()
