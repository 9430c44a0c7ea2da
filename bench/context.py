"""Context assembly cost with every memory layer full: 200 notes, 500 KB files, 1,000 summaries.

Embedding time (one query embedding per turn, against the loopback LLM) is measured and
subtracted, as the target excludes it. Also reports Janome messages per second (see
bench/janome_rate.py for the detailed run). Prints one JSON object and a one-line summary.
Target (issue 4): p50 ≤ 5 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.janome_rate import chat_lines  # noqa: E402
from bench.turn_overhead import TimedBackend  # noqa: E402
from bot.chat.context import ContextRequest  # noqa: E402
from bot.config import Settings  # noqa: E402
from bot.llm.backend import ChatBackend  # noqa: E402
from bot.llm.gateway import default_backend_factory  # noqa: E402
from bot.memory.japanese import InProcessAnalyzer  # noqa: E402
from bot.services import ServiceOptions, open_services  # noqa: E402
from bot.store.engine.database import Database  # noqa: E402
from tests.fakes.llm_server import FakeLLMServer  # noqa: E402

NOTES = 200
KB_FILES = 500
SUMMARIES = 1000
ROUNDS = 200
SESSION = "bench-session"
SPACE = "local:local"


def write_kb(kb_dir: Path, rng: random.Random) -> None:
    words = "tea kyoto ramen camera travel python discord music garden weather".split()
    for n in range(KB_FILES):
        topic = rng.choice(words)
        body = "\n".join(
            f"- {topic} fact {n}.{k}: " + " ".join(rng.choices(words, k=12)) for k in range(20)
        )
        (kb_dir / f"doc{n:03d}.md").write_text(f"# {topic} notes {n}\n\n{body}\n", "utf-8")


def prefill(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    now = "2026-01-01T00:00:00+00:00"
    conn.execute(
        "INSERT INTO sessions (id, space_id, title, source, created_at, updated_at) "
        "VALUES (?, ?, 't', 'bench', ?, ?)",
        (SESSION, SPACE, now, now),
    )
    conn.executemany(
        "INSERT INTO memories (space_id, session_id, summary, created_at) VALUES (?, ?, ?, ?)",
        [
            (SPACE, SESSION, f"- summary {n}: the user talked about topic {n} and liked it", now)
            for n in range(SUMMARIES)
        ],
    )
    conn.executemany(
        "INSERT INTO note_pages (space_id, title, content, position, section, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (SPACE, f"Note {n}", f"Body of note {n}. " * 40, n, f"Section {n // 20}", now, now)
            for n in range(NOTES)
        ],
    )
    conn.executemany(
        "INSERT INTO session_note_pages (space_id, session_id, page_id, created_at) "
        "VALUES (?, ?, ?, ?)",
        [(SPACE, SESSION, n, now) for n in (1, 2, 3)],
    )
    conn.executemany(
        "INSERT INTO knowledge_entries (space_id, query, title, summary, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [(SPACE, f"query {n}", f"Heading {n}", f"# Heading {n}\n- fact", now) for n in range(50)],
    )
    conn.executemany(
        "INSERT INTO messages (space_id, session_id, role, content, created_at) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (SPACE, SESSION, "user" if n % 2 == 0 else "assistant", f"message {n} about tea", now)
            for n in range(19)
        ],
    )
    conn.commit()
    conn.close()


async def measure(tmp: Path) -> dict[str, object]:
    db_path = tmp / "bench.db"
    kb_dir = tmp / "kb"
    kb_dir.mkdir()
    await (await Database.open(db_path)).close()
    prefill(db_path)
    write_kb(kb_dir, random.Random(3))
    timed: list[TimedBackend] = []

    def factory(kind: str, base: str, timeout: float, key: str) -> ChatBackend:
        backend = TimedBackend(default_backend_factory(kind, base, timeout, key))
        timed.append(backend)
        return backend

    async with FakeLLMServer() as llm:
        settings = Settings(  # type: ignore[call-arg]
            _env_file=None,
            db_path=db_path,
            kb_dir=kb_dir,
            llm_model="ollama/bench",
            llm_api_base=llm.url,
            llm_context_tokens=8192,
        )
        options = ServiceOptions(backend_factory=factory)
        async with open_services(settings, options) as services:
            message_id = int(await services.db.scalar("SELECT MAX(id) FROM messages"))
            request = ContextRequest(
                SPACE, SESSION, "tell me about kyoto tea", message_id, settings
            )
            tools = services.registry.schemas()
            sync_start = time.perf_counter()
            await services.local_kb.sync()
            sync_s = time.perf_counter() - sync_start
            costs: list[float] = []
            built = None
            for n in range(ROUNDS + 10):
                embed_before = sum(b.llm_seconds for b in timed)
                start = time.perf_counter()
                built = await services.context.build(request, tools=tools)
                wall = time.perf_counter() - start
                embed = sum(b.llm_seconds for b in timed) - embed_before
                if n >= 10:
                    costs.append((wall - embed) * 1000)
            assert built is not None
            layers = built.layer_tokens
    costs.sort()
    analyzer = InProcessAnalyzer()
    lines = chat_lines(600)
    analyzer.nouns(lines[0])
    start = time.perf_counter()
    for line in lines:
        analyzer.nouns(line)
    janome_rate = len(lines) / (time.perf_counter() - start)
    analyzer.close()
    return {
        "notes": NOTES,
        "kb_files": KB_FILES,
        "summaries": SUMMARIES,
        "rounds": ROUNDS,
        "kb_first_sync_s": round(sync_s, 2),
        "context_ms_p50": round(statistics.median(costs), 3),
        "context_ms_p99": round(costs[int(len(costs) * 0.99) - 1], 3),
        "context_tokens": built.tokens,
        "layer_tokens": layers,
        "janome_msgs_per_s": round(janome_rate),
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(measure(Path(tmp)))
    print(json.dumps(result, ensure_ascii=False))
    print(
        f"context: p50 {result['context_ms_p50']} ms, p99 {result['context_ms_p99']} ms "
        f"(target p50 ≤ 5, embedding excluded) with {NOTES} notes, {KB_FILES} KB files, "
        f"{SUMMARIES} summaries; Janome {result['janome_msgs_per_s']} msg/s"
    )


if __name__ == "__main__":
    main()
