"""Session import ("import as new") at the store level: 3,000 and 6,000 messages that each name
one of as many attachments, imported while another session keeps writing.

Prints one JSON object and a one-line summary. Targets (issue 15, item 5): the time grows
linearly (6,000 / 3,000 ≤ 3x) and no concurrent write waits 0.5 s or more.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.store.engine.database import Database  # noqa: E402
from bot.store.repos.attachments import AttachmentRepository  # noqa: E402
from bot.store.repos.memories import MemoryRepository  # noqa: E402
from bot.store.repos.messages import MessageRepository  # noqa: E402
from bot.store.repos.sessions import SessionRepository  # noqa: E402
from bot.store.transfer import SessionExport, SessionTransfer  # noqa: E402

SPACE = "local:local"
OTHER = "guild:1"
T = "2026-01-01T00:00:00+00:00"
SIZES = (3000, 6000)


def export_of(n: int) -> SessionExport:
    """`n` messages, each naming one of `n` small attachments and replying to the one before."""
    return SessionExport.model_validate(
        {
            "exported_at": T,
            "session": {"id": f"bench{n}", "created_at": T, "updated_at": T},
            "messages": [
                {
                    "id": k + 1,
                    "role": "user" if k % 2 == 0 else "assistant",
                    "content": f"message {k} about attachment:file{k:05d} " + "lorem ipsum " * 8,
                    "reply_to": k if k else None,
                    "created_at": T,
                }
                for k in range(n)
            ],
            "attachments": [
                {
                    "id": f"file{k:05d}",
                    "filename": f"{k}.txt",
                    "size": 12,
                    "created_at": T,
                    "data_base64": "aGVsbG8gd29ybGQh",
                }
                for k in range(n)
            ],
        }
    )


async def import_once(db: Database, n: int) -> dict[str, float | int]:
    """Import `n`×`n` as new while a writer stores messages in another session."""
    transfer = SessionTransfer(
        db,
        SessionRepository(db),
        MessageRepository(db),
        MemoryRepository(db),
        AttachmentRepository(db),
    )
    messages = MessageRepository(db)
    other = await SessionRepository(db).create(OTHER, title="busy")
    export = export_of(n)
    waits: list[float] = []
    start = time.perf_counter()
    importing = asyncio.create_task(transfer.import_session(SPACE, export, as_new=True))
    while not importing.done():
        began = time.perf_counter()
        await messages.add(OTHER, other.id, "user", "meanwhile")
        waits.append(time.perf_counter() - began)
    await importing
    seconds = time.perf_counter() - start
    return {
        "messages": n,
        "attachments": n,
        "import_s": round(seconds, 3),
        "concurrent_writes": len(waits),
        "max_write_wait_ms": round(max(waits, default=0.0) * 1000, 1),
    }


async def measure(tmp: Path) -> dict[str, object]:
    """Each size imported into a fresh database."""
    runs = []
    for n in SIZES:
        db = await Database.open(tmp / f"bench{n}.db")
        try:
            runs.append(await import_once(db, n))
        finally:
            await db.close()
    ratio = float(runs[1]["import_s"]) / max(float(runs[0]["import_s"]), 1e-9)
    return {
        "runs": runs,
        "growth_ratio": round(ratio, 2),
        "max_write_wait_ms": max(float(run["max_write_wait_ms"]) for run in runs),
    }


def main() -> None:
    """Run the benchmark and print JSON and a summary line."""
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(measure(Path(tmp)))
    print(json.dumps(result))
    small, large = result["runs"]  # type: ignore[misc]
    print(
        f"transfer import: {small['messages']}x{small['attachments']} in {small['import_s']} s, "
        f"{large['messages']}x{large['attachments']} in {large['import_s']} s "
        f"(x{result['growth_ratio']}, target ≤ 3); longest concurrent write "
        f"{result['max_write_wait_ms']} ms (target < 500)"
    )


if __name__ == "__main__":
    main()
