"""Session import at the store level: ids renumbered, references re-linked, copies detached."""

from __future__ import annotations

import asyncio
import base64
import sys
import threading
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from types import FrameType

import pytest

from bot.errors import ConflictError, NotFoundError
from bot.store.engine.database import Database
from bot.store.repos.attachments import AttachmentRepository
from bot.store.repos.memories import MemoryRepository
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.transfer import SessionExport, SessionTransfer

T = "2026-01-02T03:04:05+00:00"
A = "guild:222"
B = "guild:333"


def transfer_over(db: Database) -> SessionTransfer:
    """A SessionTransfer over `db`."""
    return SessionTransfer(
        db,
        SessionRepository(db),
        MessageRepository(db),
        MemoryRepository(db),
        AttachmentRepository(db),
    )


def export_with_odd_ids() -> SessionExport:
    """Ids far from a fresh database's, a reply stored before its question, a condensed
    summary, and a message that names its attachment."""
    return SessionExport.model_validate(
        {
            "exported_at": T,
            "session": {
                "id": "trip",
                "discord_channel_id": 111,
                "discord_guild_id": 222,
                "created_at": T,
                "updated_at": T,
            },
            "messages": [
                {"id": 50, "role": "assistant", "content": "late answer", "reply_to": 70,
                 "archived_at": T, "memory_id": 8, "created_at": T},
                {"id": 70, "role": "user", "content": "see attachment:att1",
                 "discord_message_id": 9001, "created_at": T},
                {"id": 90, "role": "assistant", "content": "answer", "reply_to": 70,
                 "created_at": T},
            ],
            "memories": [
                {"id": 8, "summary": "old", "condensed_into": 9, "created_at": T},
                {"id": 9, "summary": "older, condensed", "level": 1, "created_at": T},
            ],
            "attachments": [
                {"id": "att1", "filename": "a.bin", "size": 3, "created_at": T,
                 "data_base64": base64.b64encode(b"abc").decode()},
            ],
        }
    )  # fmt: skip


async def test_import_relinks_replies_summaries_and_keeps_ids_where_free(db: Database) -> None:
    transfer = transfer_over(db)
    session_id = await transfer.import_session(A, export_with_odd_ids())
    assert session_id == "trip"

    exported = await transfer.export_session(A, session_id)
    assert exported.session.space_id == A
    by_content = {m.content: m for m in exported.messages}
    question = by_content["see attachment:att1"]
    assert by_content["late answer"].reply_to == question.id, "a reply before its question"
    assert by_content["answer"].reply_to == question.id
    assert question.discord_message_id == 9001
    memories = {m.summary: m for m in exported.memories}
    assert memories["old"].condensed_into == memories["older, condensed"].id
    assert by_content["late answer"].memory_id == memories["old"].id
    assert exported.session.discord_channel_id == 111
    assert [(a.id, a.data()) for a in exported.attachments] == [("att1", b"abc")]

    with pytest.raises(ConflictError):
        await transfer.import_session(A, export_with_odd_ids())
    with pytest.raises(ConflictError, match="already exists"):
        await transfer.import_session(B, export_with_odd_ids())
    with pytest.raises(NotFoundError):
        await transfer.export_session(B, session_id)


async def test_import_as_new_gets_fresh_ids_and_leaves_discord(db: Database) -> None:
    transfer = transfer_over(db)
    original = await transfer.import_session(A, export_with_odd_ids())
    copy_id = await transfer.import_session(B, export_with_odd_ids(), as_new=True)
    assert copy_id != original

    copy = await transfer.export_session(B, copy_id)
    assert copy.session.space_id == B, "imported into the space the caller named"
    (attachment,) = copy.attachments
    assert attachment.id != "att1" and attachment.data() == b"abc"
    contents = sorted(m.content for m in copy.messages)
    assert contents == ["answer", "late answer", f"see attachment:{attachment.id}"]
    assert all(m.discord_message_id is None for m in copy.messages)
    assert copy.session.discord_channel_id is None and copy.session.discord_guild_id is None
    late = next(m for m in copy.messages if m.content == "late answer")
    question = next(m for m in copy.messages if m.content.startswith("see"))
    assert late.reply_to == question.id


def big_export(n: int) -> SessionExport:
    """`n` messages, each naming one of `n` attachments (and a reply to the one before)."""
    return SessionExport.model_validate(
        {
            "exported_at": T,
            "session": {"id": f"big{n}", "created_at": T, "updated_at": T},
            "messages": [
                {
                    "id": k + 1,
                    "role": "user" if k % 2 == 0 else "assistant",
                    "content": f"message {k} about attachment:file{k:05d}, see there",
                    "reply_to": k if k else None,
                    "created_at": T,
                }
                for k in range(n)
            ],
            "attachments": [
                {"id": f"file{k:05d}", "filename": f"{k}.txt", "size": 2, "created_at": T,
                 "data_base64": "aGk="}
                for k in range(n)
            ],
        }
    )  # fmt: skip


class CallCounter:
    """Counts Python and C function calls while active, in this thread and in threads started
    after it was installed (the import's worker), as a measure of work immune to machine load."""

    def __init__(self) -> None:
        self.active = False
        self.calls = 0

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if self.active and event in ("call", "c_call"):
            self.calls += 1

    @contextmanager
    def installed(self) -> Iterator[CallCounter]:
        """Profile this thread and new threads with the counter (inactive until `counting`)."""
        sys.setprofile(self)
        threading.setprofile(self)
        try:
            yield self
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]

    async def count(self, work: Awaitable[object]) -> int:
        """How many calls `work` made."""
        self.calls, self.active = 0, True
        try:
            await work
        finally:
            self.active = False
        return self.calls


async def test_import_as_new_grows_linearly(db: Database) -> None:
    transfer = transfer_over(db)
    small, double = big_export(500), big_export(1000)
    with CallCounter().installed() as counter:
        await counter.count(transfer.import_session(A, big_export(10), as_new=True))  # warm-up
        ratio = await counter.count(
            transfer.import_session(A, double, as_new=True)
        ) / await counter.count(transfer.import_session(A, small, as_new=True))
    # Linear work gives 2; renaming every id in every message gave about 4.
    assert ratio < 3, f"twice the rows took {ratio:.1f}x the calls"


async def test_a_large_import_does_not_hold_up_other_writers(db: Database) -> None:
    transfer = transfer_over(db)
    other = await SessionRepository(db).create(B, title="busy")
    messages = MessageRepository(db)
    export = big_export(3000)

    async def longest_wait_beside_an_import() -> tuple[float, float, str]:
        """The longest write, how much slower than its CPU time the attempt ran (the share of
        the cores this process got; 1 on an idle machine, capped at 3), the copy's id."""
        waits: list[float] = []
        wall, cpu = time.perf_counter(), time.process_time()
        importing = asyncio.create_task(transfer.import_session(A, export, as_new=True))
        while not importing.done():
            start = time.perf_counter()
            await messages.add(B, other.id, "user", f"meanwhile {len(waits)}")
            waits.append(time.perf_counter() - start)
        assert len(waits) >= 2, "the writer ran during the import"
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return max(waits), min(3.0, max(1.0, wall / max(cpu, 1e-3))), await importing

    # The import's one write transaction also fills the full-text index (triggers, ~0.15 ms
    # per message on an idle machine): 3,000 messages hold the writer about 3x longer than
    # the rows alone did, so the bound is 1 s rather than 0.5 s. A shared CI machine can
    # stall any single run for longer (once 1.5 s on PostgreSQL, where nothing is locked), so
    # the best of up to three runs is judged, and the bound stretches by how much of the CPU
    # the attempt got (SQLite's import is CPU work in this process: at load 8 on two cores it
    # got half, and a write waited 1.5 s; on PostgreSQL the server does the work, so the
    # bound may stretch to the cap); holding writers for the whole import (7 s before the fix)
    # fails all three even at the cap.
    longest, limit, copy_id = 0.0, 1.0, ""
    for _ in range(3):
        longest, slowdown, copy_id = await longest_wait_beside_an_import()
        limit = 1.0 * slowdown
        if longest < limit:
            break
    assert longest < limit, f"a write waited {longest:.2f} s (limit {limit:.2f} s)"
    copy = await transfer.export_session(A, copy_id)
    assert len(copy.messages) == 3000 and len(copy.attachments) == 3000
    new_ids = {a.id for a in copy.attachments}
    assert all(m.content.split("attachment:")[1][:16] in new_ids for m in copy.messages)


async def test_renaming_matches_whole_ids(db: Database) -> None:
    """`attachment:a` renamed first must not turn `attachment:ab` into `<new a>b`."""
    export = SessionExport.model_validate(
        {
            "exported_at": T,
            "session": {"id": "pre", "created_at": T, "updated_at": T},
            "messages": [
                {"id": 1, "role": "user", "created_at": T,
                 "content": "attachment:a, attachment:ab and attachment:abc (unknown)"},
            ],
            "attachments": [
                {"id": i, "filename": "f", "size": 0, "created_at": T, "data_base64": ""}
                for i in ("a", "ab")
            ],
        }
    )  # fmt: skip
    transfer = transfer_over(db)
    copy = await transfer.export_session(A, await transfer.import_session(A, export, as_new=True))
    ids = sorted(a.id for a in copy.attachments)
    (message,) = copy.messages
    refs = [part.split(" ")[0].rstrip(",") for part in message.content.split("attachment:")[1:]]
    assert sorted(refs[:2]) == ids and refs[2] == "abc", message.content
