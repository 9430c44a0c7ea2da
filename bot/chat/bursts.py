"""A member's rapid messages as one turn (issue 39): typing state, and the turn they join.

A front end opens a `Burst` for a member's message and passes it with the turn. Until the
turn shows anything, the member's next messages in that conversation join it: a turn still
waiting takes them in, and a turn whose model call is under way is restarted with them (the
call is cancelled as superseded). A turn waits only while its author is typing again (a
typing event after their latest message), for at most the burst's bound; a lone message
starts at once. Pure asyncio: no Discord here, the front end reports typing and messages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from bot.llm.gateway import SUPERSEDED

Clock = Callable[[], float]

# Discord shows a member as typing for about 10 s after each TYPING_START it sends.
TYPING_WINDOW = 10.0
# Typing records are swept once this many are kept (stale ones are dropped then).
TYPING_SWEEP_AT = 1024
# A burst takes at most this many messages after its first, and restarts its model call at
# most this many times: a flood in one thread costs a bounded number of calls, and its later
# messages are turns of their own (with the member's turn limit and cooldown).
MAX_PARTS = 8
MAX_RESTARTS = 2


class Typing:
    """Who is writing where: the last typing event per (place, member), cleared when they post."""

    def __init__(self, clock: Clock = time.monotonic, window: float = TYPING_WINDOW) -> None:
        self._clock = clock
        self._window = window
        self._last: dict[tuple[Hashable, Hashable], float] = {}

    def typed(self, place: Hashable, member: Hashable) -> None:
        """`member` started (or goes on) typing in `place` now."""
        if len(self._last) >= TYPING_SWEEP_AT:
            self._sweep()
        self._last[(place, member)] = self._clock()

    def wrote(self, place: Hashable, member: Hashable) -> None:
        """`member` posted in `place`: the typing that led to it is over."""
        self._last.pop((place, member), None)

    def lapses_at(self, place: Hashable, member: Hashable) -> float | None:
        """When `member`'s typing in `place` lapses (clock time); None if they are not typing."""
        last = self._last.get((place, member))
        if last is None:
            return None
        end = last + self._window
        if end <= self._clock():
            del self._last[(place, member)]
            return None
        return end

    def _sweep(self) -> None:
        stale = self._clock() - self._window
        for key in [key for key, last in self._last.items() if last <= stale]:
            del self._last[key]

    def __len__(self) -> int:
        return len(self._last)


@dataclass(frozen=True)
class BurstPart:
    """A message that joined a burst after its first: what the engine stores and answers."""

    text: str
    author_id: str | None = None
    author_name: str | None = None
    discord_message_id: int | None = None
    # The front end's own object for the message (answered on its own if never taken).
    origin: Any = None


class Burst:
    """One member's open turn: joinable until it shows anything, or until someone else speaks."""

    def __init__(
        self,
        author: Hashable,
        *,
        wait_seconds: float,
        typing_lapses: Callable[[], float | None],
        clock: Clock = time.monotonic,
    ) -> None:
        self.author = author
        self._clock = clock
        self._deadline = clock() + wait_seconds
        self._typing_lapses = typing_lapses
        self._new: list[BurstPart] = []
        self._open = True
        self._changed = asyncio.Event()
        # The turn's task while its model call may be restarted (see `restartable`).
        self._running: asyncio.Task[Any] | None = None
        self._superseded = False
        self._joined = 0
        self.restarts = 0

    @property
    def is_open(self) -> bool:
        """Whether the member's next message still joins this turn."""
        return self._open

    def join(self, part: BurstPart) -> bool:
        """Add the member's next message; False once the turn showed something (or closed)."""
        if not self._open or self._joined >= MAX_PARTS:
            return False
        self._joined += 1
        self._new.append(part)
        self._changed.set()
        if self._running is not None and not self._superseded:
            self._superseded = True
            self._running.cancel(SUPERSEDED)
            if self.restarts + 1 >= MAX_RESTARTS:
                self._open = False  # this restart is its last: it takes what joined so far
        return True

    def typed(self) -> None:
        """The author typed again: a waiting turn looks at the new lapse time."""
        self._changed.set()

    def close(self) -> None:
        """No more joins: the turn shows its answer, or another member spoke."""
        self._open = False
        self._changed.set()

    @property
    def pending(self) -> bool:
        """Whether parts joined that the turn has not taken yet."""
        return bool(self._new)

    def take(self) -> list[BurstPart]:
        """The parts joined since the last take, in arrival order."""
        taken, self._new = self._new, []
        return taken

    def _wait_until(self) -> float | None:
        """Until when the turn waits for more (clock time); None: start now."""
        if not self._open or self._new:
            return None
        lapse = self._typing_lapses()
        if lapse is None:
            return None
        until = min(lapse, self._deadline)
        return until if until > self._clock() else None

    async def settle(self) -> None:
        """Wait while the author is typing more (bounded); return at once for a lone message."""
        while (until := self._wait_until()) is not None:
            self._changed.clear()
            try:
                async with asyncio.timeout(max(0.0, until - self._clock())):
                    await self._changed.wait()
            except TimeoutError:
                return

    def restartable(self) -> Restartable:
        """`async with burst.restartable() as scope:` a join cancels the body (superseded)."""
        return Restartable(self)


class Restartable:
    """The part of a turn a joining message restarts: its body is cancelled with SUPERSEDED.

    Like `bot.chat.stopping.StopScope`: our cancellation is absorbed (`superseded` tells the
    caller to start again); anyone else's passes through.
    """

    def __init__(self, burst: Burst) -> None:
        self._burst = burst
        self.superseded = False

    async def __aenter__(self) -> Restartable:
        burst = self._burst
        burst._superseded = False
        if burst._open:
            burst._running = asyncio.current_task()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        burst = self._burst
        task, burst._running = burst._running, None
        if not burst._superseded or task is None:
            return False
        burst._superseded = False
        self.superseded = True
        burst.restarts += 1
        remaining = task.uncancel()
        if exc_type is asyncio.CancelledError:
            return remaining == 0
        return False


class Bursts:
    """The open burst of each place (a thread, a DM): who may join it, and who closes it."""

    def __init__(self) -> None:
        self._open: dict[Hashable, Burst] = {}

    def open(self, place: Hashable, burst: Burst) -> None:
        """`burst` is the place's open turn now (an older one there is closed)."""
        old = self._open.get(place)
        if old is not None and old is not burst:
            old.close()
        self._open[place] = burst

    def join(self, place: Hashable, author: Hashable, part: BurstPart) -> bool:
        """Hand `part` to the author's open turn in `place`; False if it has none."""
        burst = self._open.get(place)
        return burst is not None and burst.author == author and burst.join(part)

    def spoke(self, place: Hashable, author: Hashable) -> None:
        """Someone wrote in `place`: another member's open turn there takes no more."""
        burst = self._open.get(place)
        if burst is not None and burst.author != author:
            burst.close()

    def typed(self, place: Hashable, author: Hashable) -> None:
        """`author` typed in `place`: their waiting turn there looks again."""
        burst = self._open.get(place)
        if burst is not None and burst.author == author:
            burst.typed()

    def finish(self, place: Hashable, burst: Burst) -> list[BurstPart]:
        """The turn of `burst` ended: forget it; the parts it never took."""
        if self._open.get(place) is burst:
            del self._open[place]
        burst.close()
        return burst.take()

    def __len__(self) -> int:
        return len(self._open)
