"""Durations as PlayChat logs them: on the event loop's clock, in whole milliseconds, rounded.

Deadlines (asyncio.timeout, aiohttp's timeouts) run on the loop's clock. Under uvloop that clock
counts whole milliseconds, so a call cut at 0.5 s by it may have lasted 499.2 ms by
`time.perf_counter()`, and truncating that logged 499 for a "timed out after 0.5 s" call.
Measured on the same clock as the deadline and rounded, a cut call logs at least its deadline.
"""

from __future__ import annotations

import asyncio


def loop_now() -> float:
    """The running event loop's clock, in seconds (the clock its deadlines run on)."""
    return asyncio.get_running_loop().time()


def elapsed_ms(started: float) -> int:
    """Whole milliseconds since `started` (a `loop_now()` reading), rounded to nearest."""
    return max(0, round((loop_now() - started) * 1000))
