"""KeyedLocks: per-key serialisation that survives the gap between a release and a wake-up."""

from __future__ import annotations

import asyncio

from bot.utils.locks import KeyedLocks


async def test_a_newcomer_queues_behind_a_waiter_woken_but_not_yet_running() -> None:
    locks = KeyedLocks()
    inside: list[str] = []
    overlaps: list[tuple[str, ...]] = []
    gates = {name: asyncio.Event() for name in "abc"}
    entered = {name: asyncio.Event() for name in "abc"}

    async def job(name: str) -> None:
        async with locks.hold("session"):
            inside.append(name)
            if len(inside) > 1:
                overlaps.append(tuple(inside))
            entered[name].set()
            await gates[name].wait()
            inside.remove(name)

    a = asyncio.create_task(job("a"))
    await entered["a"].wait()
    b = asyncio.create_task(job("b"))
    await asyncio.sleep(0)  # b is now waiting on the lock
    gates["a"].set()
    await a  # released; b is woken but has not run yet
    c = asyncio.create_task(job("c"))  # arrives in exactly that gap
    await entered["b"].wait()
    gates["b"].set()
    await entered["c"].wait()
    gates["c"].set()
    await asyncio.gather(b, c)
    assert overlaps == []
    assert len(locks) == 0, "forgotten once nobody holds or waits"
