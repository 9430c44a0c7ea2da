"""Logged durations agree with the deadlines that cut them (bot/utils/durations.py)."""

from __future__ import annotations

import asyncio

import pytest

from bot.utils import durations
from bot.utils.durations import elapsed_ms, loop_now


def test_milliseconds_are_rounded_not_truncated(monkeypatch: pytest.MonkeyPatch) -> None:
    for now, expected in ((1.4999999999, 500), (1.5, 500), (1.5004, 500), (1.5006, 501)):
        monkeypatch.setattr(durations, "loop_now", lambda now=now: now)
        assert elapsed_ms(1.0) == expected, now
    monkeypatch.setattr(durations, "loop_now", lambda: 0.9)
    assert elapsed_ms(1.0) == 0, "never negative"


async def test_a_call_cut_at_its_deadline_logs_at_least_the_deadline() -> None:
    """On the loop's own clock (whole ms under uvloop) a cut never reads short of its
    deadline; on perf_counter, truncated, about 1 in 300 cuts at 20 ms read 19."""
    for _ in range(100):
        started = loop_now()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.005):
                await asyncio.sleep(1)
        assert elapsed_ms(started) >= 5
