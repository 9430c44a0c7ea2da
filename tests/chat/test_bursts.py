"""A burst's bounds (pure logic): how many messages join it and how often they restart it."""

from __future__ import annotations

import asyncio
import contextlib

from bot.chat.bursts import MAX_PARTS, MAX_RESTARTS, Burst, BurstPart


def _burst() -> Burst:
    return Burst("alice", wait_seconds=8, typing_lapses=lambda: None)


async def test_a_waiting_burst_takes_at_most_max_parts_messages() -> None:
    burst = _burst()
    joined = [burst.join(BurstPart(f"part {n}")) for n in range(MAX_PARTS + 1)]
    assert joined == [True] * MAX_PARTS + [False]
    assert [part.text for part in burst.take()] == [f"part {n}" for n in range(MAX_PARTS)]


async def test_joins_restart_a_running_call_at_most_max_restarts_times() -> None:
    burst = _burst()
    started = asyncio.Event()

    async def call() -> bool:
        restart = burst.restartable()
        async with restart:
            started.set()
            await asyncio.Event().wait()
        return restart.superseded

    accepted = []
    for n in range(MAX_RESTARTS + 1):
        started.clear()
        task = asyncio.create_task(call())
        await started.wait()
        accepted.append(burst.join(BurstPart(f"part {n}")))
        if not accepted[-1]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            break
        assert await task, "the call was superseded, not failed"
    assert accepted == [True] * MAX_RESTARTS + [False]
    assert burst.restarts == MAX_RESTARTS and not burst.is_open
