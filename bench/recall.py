"""Recall quality and cost: Recall@5/@10 on generated multi-session conversations, and the
latency of the recall read at 10k / 100k (and, with --million, 1M) messages in one space.

Quality: the sessions of bench/recall_data.py (four named members, a year of sessions, English
and Japanese chatter, planted evidence messages) are imported through the store's session
import, with speaker names and dates; the background recall index (when this version has one)
is filled as the bot fills it, timed; then each probe's paraphrased question goes through the
`recall` tool's read (`RecallService.search`, 10 hits) and we count the questions whose
evidence message is in the top 5 / top 10.

Cost: a fresh SQLite file per size, one space, sessions of 100 messages drawn from the same
chatter with the evidence planted, written with executemany in batches (build time reported);
the questions are then asked twice each and the read's p50/p95 reported (target: p95 ≤ 30 ms
at 1M).

Run: .venv/bin/python bench/recall.py [--million] [--sizes 10000,100000] [--postgresql SIZES]
[--postgresql-server URL]
(--postgresql: a temporary local cluster, as tests/fakes/postgres.py starts one; the quality
set is then also measured there, and each size's read timed. --postgresql-server: a running
cluster instead, each size's database built there once and reused by later runs.)
Prints one JSON object, then a one-line summary. Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.recall_data import PROBES, SPEAKERS, conversations, filler
from bench.recall_index import fill_index, index_rows_sqlite, index_words
from bot.memory.recall import RecallService
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.transfer import (
    ExportedMessage,
    ExportedSession,
    SessionExport,
    SessionTransfer,
)

SPACE = "guild:28"
BATCH = 10_000
SESSION_LINES = 100


def _export(session: Any) -> SessionExport:
    first, last = session.lines[0].at, session.lines[-1].at
    return SessionExport(
        exported_at=last,
        session=ExportedSession(
            id=session.id, title=session.title, created_at=first, updated_at=last, source="import"
        ),
        messages=[
            ExportedMessage(
                id=n + 1,
                role="user",
                content=line.content,
                author_id=line.speaker.lower(),
                author_name=line.speaker,
                created_at=line.at,
            )
            for n, line in enumerate(session.lines)
        ],
    )


async def _import(db: Database, repos: Repositories) -> dict[int, int]:
    """Import every generated session; returns probe index → evidence message id."""
    transfer = SessionTransfer(
        db, repos.sessions, repos.messages, repos.memories, repos.attachments
    )
    evidence: dict[int, int] = {}
    for session in conversations():
        await transfer.import_session(SPACE, _export(session))
        for line in session.lines:
            if line.probe is not None:
                row = await db.fetchone(
                    "SELECT id FROM messages WHERE space_id = ? AND session_id = ? AND content = ?",
                    (SPACE, session.id, line.content),
                )
                assert row is not None
                evidence[line.probe] = int(row["id"])
    return evidence


async def quality(where: Path | str) -> dict[str, Any]:
    """Recall@5/@10 of the tool's read over the imported conversations (in a SQLite file in
    the folder `where`, or in the empty PostgreSQL database at the URL `where`)."""
    if isinstance(where, str):
        db = await Database.connect(where)
    else:
        db = await Database.open(where / "quality.db")
    try:
        repos = Repositories.over(db)
        evidence = await _import(db, repos)
        messages = int(await db.scalar("SELECT COUNT(*) FROM messages"))
        index_s = await fill_index(db, repos)
        service = RecallService(repos.recall)
        ranks: list[int | None] = []
        missed: list[str] = []
        for index, probe in enumerate(PROBES):
            page = await service.search(SPACE, probe.question, count=10)
            ids = [hit.id for hit in page.hits if hit.kind == "message"]
            rank = ids.index(evidence[index]) + 1 if evidence[index] in ids else None
            ranks.append(rank)
            if rank is None:
                missed.append(probe.question)
    finally:
        await db.close()
    found = [rank for rank in ranks if rank is not None]
    return {
        "messages": messages,
        "sessions": len(conversations()),
        "questions": len(PROBES),
        "recall_at_5": round(sum(1 for r in found if r <= 5) / len(PROBES), 3),
        "recall_at_10": round(len(found) / len(PROBES), 3),
        "index_fill_s": index_s,
        "missed_at_10": missed,
    }


def _rows(count: int, rng: random.Random) -> list[tuple[Any, ...]]:
    """`count` message rows in sessions of SESSION_LINES, the evidence planted evenly."""
    plant = {int(count * (n + 0.5) / len(PROBES)): probe for n, probe in enumerate(PROBES)}
    start = 1_743_498_000  # 2025-04-01
    rows: list[tuple[Any, ...]] = []
    for n in range(count):
        probe = plant.get(n)
        speaker = probe.speaker if probe else rng.choice(SPEAKERS)
        content = probe.evidence if probe else filler(rng)
        at = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(start + n * 30))
        rows.append((n + 1, SPACE, f"s{n // SESSION_LINES}", "user", content, speaker, at))
    return rows


def build(path: Path, count: int) -> float:
    """A SQLite file with `count` messages in one space; returns the seconds it took."""
    asyncio.run(_create(path))
    rows = _rows(count, random.Random(count))
    started = time.perf_counter()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA synchronous = OFF")
    stamp = rows[0][6]
    conn.executemany(
        "INSERT INTO sessions (id, space_id, title, source, created_at, updated_at) "
        "VALUES (?, ?, 'chat', 'import', ?, ?)",
        [(f"s{n}", SPACE, stamp, stamp) for n in range((count - 1) // SESSION_LINES + 1)],
    )
    for offset in range(0, count, BATCH):
        conn.executemany(
            "INSERT INTO messages (id, space_id, session_id, role, content, author_name, "
            "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows[offset : offset + BATCH],
        )
        index_rows_sqlite(conn, rows[offset : offset + BATCH])
        conn.commit()
    conn.execute("ANALYZE")
    conn.commit()
    conn.close()
    return time.perf_counter() - started


async def _create(path: Path) -> None:
    await (await Database.open(path)).close()


async def build_postgresql(url: str, count: int) -> float:
    """The same rows in a PostgreSQL database at `url`; returns the seconds it took."""
    db = await Database.connect(url)
    try:
        rows = _rows(count, random.Random(count))
        started = time.perf_counter()
        stamp = rows[0][6]
        await Repositories.over(db).spaces.ensure(SPACE)
        await db.executemany(
            "INSERT INTO sessions (id, space_id, title, source, created_at, updated_at) "
            "VALUES (?, ?, 'chat', 'import', ?, ?)",
            [(f"s{n}", SPACE, stamp, stamp) for n in range((count - 1) // SESSION_LINES + 1)],
        )
        for offset in range(0, count, BATCH):
            batch = rows[offset : offset + BATCH]
            await db.executemany(
                "INSERT INTO messages (id, space_id, session_id, role, content, author_name, "
                "created_at, recall_indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(*row, stamp) for row in batch],
            )
            await db.executemany(
                "INSERT INTO recall_terms (id, space_id, terms) VALUES (?, ?, ?)",
                [(r[0], r[1], index_words(r[4], r[5], r[6])) for r in batch],
            )
        await db.execute("ANALYZE")
        return time.perf_counter() - started
    finally:
        await db.close()


def latency_postgresql(sizes: list[int], server: str = "") -> dict[str, Any] | str:
    """Build each size in a temporary local PostgreSQL cluster, then time the read there.
    With `server` (a running cluster's maintenance URL), each size's database is kept there
    as `recall_bench_<size>` and reused by later runs (the 1M build takes minutes)."""
    from tests.fakes.postgres import SKIP_REASON, find_bin_dir, temp_postgres

    if server:
        return asyncio.run(_on_server(server, sizes))
    if find_bin_dir() is None:
        return f"not available: {SKIP_REASON}"
    out: dict[str, Any] = {}
    with temp_postgres() as cluster:
        out["quality"] = asyncio.run(quality(cluster.create_database("quality")))
        for size in sizes:
            url = cluster.create_database("recall")
            build_s = asyncio.run(build_postgresql(url, size))
            out[str(size)] = {"build_s": round(build_s, 1), **asyncio.run(_latency(url))}
    return out


async def _on_server(server: str, sizes: list[int]) -> dict[str, Any]:
    """`latency_postgresql` on a running cluster: a fresh quality database, the sizes'
    databases built once (a database that holds its size's messages is read as it is)."""
    base = server.rsplit("/", 1)[0]
    _psql(server, "DROP DATABASE IF EXISTS recall_bench_quality")
    _psql(server, "CREATE DATABASE recall_bench_quality TEMPLATE template0")
    out: dict[str, Any] = {"quality": await quality(f"{base}/recall_bench_quality")}
    for size in sizes:
        name = f"recall_bench_{size}"
        url = f"{base}/{name}"
        build_s = 0.0
        found = _psql(server, f"SELECT COUNT(*) FROM pg_database WHERE datname = '{name}'")
        if found == "0" or await _messages(url) != size:
            _psql(server, f"DROP DATABASE IF EXISTS {name}")
            _psql(server, f"CREATE DATABASE {name} TEMPLATE template0")
            build_s = await build_postgresql(url, size)
        out[str(size)] = {"build_s": round(build_s, 1), **await _latency(url)}
    return out


def _psql(url: str, sql: str) -> str:
    done = subprocess.run(
        ["psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


async def _messages(url: str) -> int:
    db = await Database.connect(url)
    try:
        return int(await db.scalar("SELECT COUNT(*) FROM messages"))
    finally:
        await db.close()


async def _latency(path: Path | str, rounds: int = 2) -> dict[str, float]:
    db = await (Database.connect(path) if isinstance(path, str) else Database.open(path))
    try:
        service = RecallService(Repositories.over(db).recall)
        await service.search(SPACE, "warm up", count=10)
        costs: list[float] = []
        for _ in range(rounds):
            for probe in PROBES:
                started = time.perf_counter()
                await service.search(SPACE, probe.question, count=10)
                costs.append((time.perf_counter() - started) * 1000)
    finally:
        await db.close()
    # The first round alone: nothing this process has read before (PostgreSQL remembers
    # the terms it counted common, and a large table's statistics, for some minutes).
    first = sorted(costs[: len(PROBES)])
    costs.sort()
    return {
        "p50_ms": round(statistics.median(costs), 2),
        "p95_ms": round(costs[max(0, int(len(costs) * 0.95) - 1)], 2),
        "max_ms": round(costs[-1], 2),
        "first_round_p95_ms": round(first[max(0, int(len(first) * 0.95) - 1)], 2),
    }


def latency(tmp: Path, sizes: list[int]) -> dict[str, Any]:
    """Build each size, then time the read there."""
    out: dict[str, Any] = {}
    for size in sizes:
        path = tmp / f"scale-{size}.db"
        build_s = build(path, size)
        out[str(size)] = {"build_s": round(build_s, 1), **asyncio.run(_latency(path))}
        path.unlink()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million", action="store_true", help="also 1,000,000 messages")
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument(
        "--postgresql", default="", help="also time these sizes on PostgreSQL, e.g. 100000"
    )
    parser.add_argument(
        "--postgresql-server",
        default="",
        help="a running cluster's maintenance URL: build each size's database there once, "
        "reuse it in later runs",
    )
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",") if size]
    if args.million:
        sizes.append(1_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        result: dict[str, Any] = {
            "quality": asyncio.run(quality(Path(tmp))),
            "latency": latency(Path(tmp), sizes),
        }
    pg_sizes = [int(size) for size in args.postgresql.split(",") if size]
    if pg_sizes:
        result["latency_postgresql"] = latency_postgresql(pg_sizes, args.postgresql_server)
    print(json.dumps(result, ensure_ascii=False))
    q = result["quality"]
    costs = ", ".join(
        f"{int(size) // 1000}k p50 {v['p50_ms']} / p95 {v['p95_ms']} ms (build {v['build_s']} s)"
        for size, v in result["latency"].items()
    )
    pg = result.get("latency_postgresql")
    if isinstance(pg, dict):
        pg_q = pg["quality"]
        costs += (
            f"; postgresql R@5 {pg_q['recall_at_5']}, R@10 {pg_q['recall_at_10']}, "
            + ", ".join(
                f"{int(n) // 1000}k p50 {v['p50_ms']} / p95 {v['p95_ms']} ms"
                for n, v in pg.items()
                if n != "quality"
            )
        )
    print(
        f"recall: R@5 {q['recall_at_5']}, R@10 {q['recall_at_10']} over {q['questions']} "
        f"questions, {q['messages']} messages; latency {costs}"
    )


if __name__ == "__main__":
    main()
