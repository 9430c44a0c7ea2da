"""The edit cadence with a fake clock: first text at once, bounded edits, final text at once."""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field

import pytest

from bot.exts.chat._streaming import (
    CHANNEL_PERIOD,
    CHANNEL_WRITES,
    ChannelWindows,
    StreamCadence,
    WriteWindow,
)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Reply:
    """One simulated reply: chunk arrival times and when its stream ends."""

    arrivals: list[float]
    end: float
    writes: list[tuple[float, bool]] = field(default_factory=list)  # (time, final)


def simulate(replies: list[Reply], interval: float) -> list[float]:
    """Drive each reply's writer like bot/exts/reply.py does; return every write time."""
    clock = FakeClock()
    window = WriteWindow()
    cadences = [StreamCadence(window, interval, clock) for _ in replies]
    dirty = [False] * len(replies)
    ended = [False] * len(replies)
    done = [False] * len(replies)
    queue: list[tuple[float, int, int, str]] = []
    seq = 0
    for index, reply in enumerate(replies):
        for at in reply.arrivals:
            heapq.heappush(queue, (at, seq := seq + 1, index, "chunk"))
        heapq.heappush(queue, (reply.end, seq := seq + 1, index, "end"))
    all_writes: list[float] = []
    while queue:
        at, _, index, kind = heapq.heappop(queue)
        clock.now = at
        if done[index]:
            continue
        if kind == "chunk":
            dirty[index] = True
        elif kind == "end":
            ended[index] = dirty[index] = True
        if not dirty[index]:
            continue
        delay = cadences[index].delay(final=ended[index])
        if delay > 0:
            heapq.heappush(queue, (at + delay, seq := seq + 1, index, "wake"))
            continue
        cadences[index].record()
        dirty[index] = False
        replies[index].writes.append((at, ended[index]))
        all_writes.append(at)
        done[index] = ended[index]
    return sorted(all_writes)


def _max_in_window(times: list[float], span: float) -> int:
    best = 0
    for i, start in enumerate(times):
        best = max(best, sum(1 for t in times[i:] if t < start + span))
    return best


def _stream(rng: random.Random, start: float) -> Reply:
    arrivals, now = [], start
    for _ in range(rng.randint(1, 300)):
        now += rng.expovariate(1 / rng.choice([0.01, 0.05, 0.3, 2.0]))
        arrivals.append(now)
    return Reply(arrivals, now + rng.choice([0.0, 0.001, 0.5]))


@pytest.mark.parametrize("seed", range(60))
def test_never_more_than_five_writes_in_any_five_seconds(seed: int) -> None:
    rng = random.Random(seed)
    replies = [_stream(rng, rng.uniform(0, 3)) for _ in range(rng.choice([1, 1, 2, 3]))]
    interval = rng.choice([0.0, 0.05, 0.5, 1.2])
    times = simulate(replies, interval)
    assert _max_in_window(times, CHANNEL_PERIOD) <= CHANNEL_WRITES
    for reply in replies:
        assert reply.writes and reply.writes[-1][1], "every reply ends with its final write"
        interim = [t for t, final in reply.writes if not final]
        gaps = [b - a for a, b in itertools.pairwise(interim)]
        assert all(gap >= interval - 1e-9 for gap in gaps)


@pytest.mark.parametrize("seed", range(40))
def test_first_text_at_once_and_final_text_when_the_stream_ends(seed: int) -> None:
    rng = random.Random(1000 + seed)
    reply = _stream(rng, 0.0)
    simulate([reply], rng.choice([0.05, 0.5, 1.2]))
    assert reply.writes[0][0] == reply.arrivals[0], "the first text is not held back"
    assert reply.writes[-1] == (reply.end, True), "a slot was left free for the final text"


def test_default_cadence_edits_about_every_interval() -> None:
    arrivals = [i * 0.05 for i in range(200)]  # 200 tokens over 10 s
    reply = Reply(arrivals, arrivals[-1])
    simulate([reply], 1.2)
    times = [t for t, _ in reply.writes]
    assert 8 <= len(times) <= 10, times
    assert reply.writes[-1] == (arrivals[-1], True)


def test_window_and_channels() -> None:
    window = WriteWindow(limit=2, period=1.0)
    window.record(0.0)
    assert window.wait(0.5) == 0.0
    window.record(0.5)
    assert window.wait(0.6) == pytest.approx(0.4)
    assert window.wait(0.6, reserve=1) == pytest.approx(0.9)
    assert not window.idle(1.4) and window.wait(1.6) == 0.0 and window.idle(1.6)
    clock = FakeClock()
    channels = ChannelWindows(clock=clock)
    first = channels.get(1)
    assert channels.get(1) is first
    first.record(clock())
    clock.now = 100.0
    channels.get(2)
    assert len(channels) == 1, "idle channels are forgotten"
    with pytest.raises(ValueError):
        WriteWindow(limit=0)
    with pytest.raises(ValueError):
        StreamCadence(first, -1.0)
