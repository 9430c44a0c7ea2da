"""When a streamed reply may write to Discord: bounded edit cadence under the channel limit.

Pure (no discord, no event loop): callers pass a clock and ask how long to wait. Discord allows
about 5 message writes (creates and edits share the bucket) per 5 s per channel; a reply shows
its first text at once, then edits at most every `interval` seconds, and the final text as soon
as the channel window allows, without waiting for the next cadence tick.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

Clock = Callable[[], float]

CHANNEL_WRITES = 5
CHANNEL_PERIOD = 5.0
# Discord times the window on its side; a little slack absorbs network jitter.
CHANNEL_SLACK = 0.2
# Once a reply's first text is out, the model's stream is read at most this often: each read
# gathers the tokens sent meanwhile (about 10 at 50 tokens/s, where one wake-up per token cost
# the bot about 40% more CPU per reply), and the end of an answer shows at most this late.
READ_PACE = 0.2


def read_pace(interval: float) -> float:
    """Seconds the model's stream may gather between reads, for edits `interval` apart."""
    return min(READ_PACE, interval / 4)


class WriteWindow:
    """A sliding window of one channel's writes: at most `limit` within any `period` seconds."""

    def __init__(
        self, limit: int = CHANNEL_WRITES, period: float = CHANNEL_PERIOD + CHANNEL_SLACK
    ) -> None:
        if limit < 1 or period <= 0:
            raise ValueError("limit must be >= 1 and period > 0")
        self.limit = limit
        self.period = period
        self._times: deque[float] = deque()

    def _forget(self, now: float) -> None:
        while self._times and self._times[0] <= now - self.period:
            self._times.popleft()

    def wait(self, now: float, *, reserve: int = 0) -> float:
        """Seconds from `now` until one more write fits, keeping `reserve` slots free."""
        self._forget(now)
        allowed = max(1, self.limit - reserve)
        if len(self._times) < allowed:
            return 0.0
        # The write fits once enough of the oldest writes have left the window.
        oldest_needed = self._times[len(self._times) - allowed]
        return max(0.0, oldest_needed + self.period - now)

    def record(self, now: float) -> None:
        """Count a write made at `now`."""
        self._forget(now)
        self._times.append(now)

    def idle(self, now: float) -> bool:
        """True when no write of the last `period` seconds is remembered."""
        self._forget(now)
        return not self._times


class ChannelWindows:
    """One `WriteWindow` per channel, shared by every reply there; idle ones are dropped."""

    def __init__(
        self,
        limit: int = CHANNEL_WRITES,
        period: float = CHANNEL_PERIOD + CHANNEL_SLACK,
        clock: Clock = time.monotonic,
    ) -> None:
        self._limit = limit
        self._period = period
        self._clock = clock
        self._windows: dict[int, WriteWindow] = {}

    def get(self, channel_id: int) -> WriteWindow:
        """The window of `channel_id` (created on first use)."""
        window = self._windows.get(channel_id)
        if window is None:
            self._prune()
            window = self._windows[channel_id] = WriteWindow(self._limit, self._period)
        return window

    def __len__(self) -> int:
        return len(self._windows)

    def _prune(self) -> None:
        now = self._clock()
        for channel_id in [cid for cid, w in self._windows.items() if w.idle(now)]:
            del self._windows[channel_id]


class StreamCadence:
    """The write schedule of one reply: first write at once, edits every `interval`, final soon."""

    def __init__(self, window: WriteWindow, interval: float, clock: Clock = time.monotonic) -> None:
        if interval < 0:
            raise ValueError("interval must be >= 0")
        self._window = window
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self.writes = 0

    def delay(self, *, final: bool = False) -> float:
        """Seconds to wait before the next write (0: write now).

        The first write and the final one are bound only by the channel window; edits in
        between also wait until `interval` has passed since this reply's previous write, and
        leave one slot of the window free so that the final text never waits for a slot.
        """
        now = self._clock()
        if final or self._last is None:
            return self._window.wait(now)
        wait = self._window.wait(now, reserve=1)
        return max(wait, self._last + self._interval - now, 0.0)

    def record(self) -> None:
        """Count a write made now (a create or an edit)."""
        now = self._clock()
        self._window.record(now)
        self._last = now
        self.writes += 1
