"""How long "erase me" holds the database for a member who said a lot, on a real SQLite file.

One space: the member's messages (each answered by the bot, each indexed for recall), as many
of another member's, a word pool of legacy words (no recorded author, so every erased text is
searched for them), API log rows of the space. Each round erases the member from a fresh copy
of the file; prints one JSON object and a one-line summary.

Run: `.venv/bin/python bench/erase.py [--messages 5000] [--channels 10] [--logs 10000]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bot.memory.member_memory import MemberMemory
from bot.store import Repositories
from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.erase.operations import MemberErasure

SPACE = "guild:1"
X, Y = "111", "222"
WORDS_PER_CHANNEL = 200


def _text(author: str, index: int) -> str:
    return f"message {index} of {author}: my cat word{index % 977} went to place{index % 313} again"


async def _fill(path: Path, messages: int, channels: int, logs: int) -> None:
    db = await Database.open(path)
    try:
        repos = Repositories.over(db)
        sessions = [(await repos.sessions.create(SPACE, title=f"t{i}")).id for i in range(50)]
        now = utcnow()
        rows = [
            (SPACE, sessions[index % 50], "user", _text(author, index), author, now)
            for index in range(messages)
            for author in (X, Y)
        ]
        await db.executemany(
            "INSERT INTO messages (space_id, session_id, role, content, author_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        await db.execute(
            "INSERT INTO messages (space_id, session_id, role, content, reply_to, created_at) "
            "SELECT space_id, session_id, 'assistant', 'Noted: ' || content, id, created_at "
            "FROM messages WHERE role = 'user'"
        )
        await db.execute(
            "INSERT INTO recall_terms (id, space_id, terms) SELECT id, space_id, content "
            "FROM messages"
        )
        for channel in range(channels):
            words = [f"word{i}" for i in range(channel * 50, channel * 50 + WORDS_PER_CHANNEL)]
            await repos.word_pool.add(SPACE, channel, words, keep=WORDS_PER_CHANNEL)
        await db.executemany(
            "INSERT INTO api_logs (session_id, space_id, model, purpose, request_json, "
            "response_text, latency_ms, created_at) VALUES (?, ?, 'm', 'chat', ?, 'ok', 5, ?)",
            [(sessions[i % 50], SPACE, f'"{_text(X, i)}"', utcnow()) for i in range(logs)],
        )
    finally:
        await db.close()


async def _erase_once(source: Path, work: Path) -> dict[str, float]:
    shutil.copyfile(source, work)
    db = await Database.open(work)
    try:
        repos = Repositories.over(db)
        members = MemberMemory(repos.member_facts, MemberErasure(db))
        started = time.perf_counter()
        erased = await members.erase(SPACE, X)
        seconds = time.perf_counter() - started
    finally:
        await db.close()
    return {"seconds": seconds, "messages": erased.messages, "logs": getattr(erased, "logs", 0)}


async def main() -> None:
    """Fill once, erase from fresh copies, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=5000, help="the member's messages")
    parser.add_argument("--channels", type=int, default=10, help="topic channels (200 words)")
    parser.add_argument("--logs", type=int, default=10000, help="API log rows of the space")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        source, work = Path(folder) / "source.db", Path(folder) / "work.db"
        await _fill(source, args.messages, args.channels, args.logs)
        runs = [await _erase_once(source, work) for _ in range(args.rounds)]
    seconds = [run["seconds"] for run in runs]
    result = {
        "benchmark": "erase",
        "member_messages": args.messages,
        "erased_messages": runs[0]["messages"],
        "pool_words": args.channels * WORDS_PER_CHANNEL,
        "api_log_rows_blanked": runs[0]["logs"],
        "seconds_median": round(statistics.median(seconds), 3),
        "seconds_max": round(max(seconds), 3),
    }
    print(json.dumps(result))
    print(
        f"erase of a member with {args.messages} messages (+answers), "
        f"{result['pool_words']} pool words, {args.logs} log rows: "
        f"median {result['seconds_median']} s, max {result['seconds_max']} s"
    )


if __name__ == "__main__":
    asyncio.run(main())
