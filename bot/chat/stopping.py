"""Stopping a turn on request: the caller sets an event, the work in the scope is cancelled."""

from __future__ import annotations

import asyncio
from types import TracebackType


class StopScope:
    """`async with StopScope(event):` cancels its body when `event` is set, then carries on.

    Like `asyncio.timeout`, but ended by an event instead of a deadline: the body's
    CancelledError is absorbed when it is ours, `stopped` tells the caller. Cancellations
    from anyone else pass through. With `event` None the scope does nothing.
    """

    def __init__(self, event: asyncio.Event | None) -> None:
        self._event = event
        self._task: asyncio.Task[object] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self.stopped = False

    async def __aenter__(self) -> StopScope:
        if self._event is not None:
            self._task = asyncio.current_task()
            self._watcher = asyncio.get_running_loop().create_task(
                self._watch(self._event), name="turn-stop-watch"
            )
        return self

    async def _watch(self, event: asyncio.Event) -> None:
        await event.wait()
        if self._task is not None:
            self.stopped = True
            self._task.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        # No await before this: a watcher woken but not yet run is cancelled before it cancels.
        if self._watcher is not None:
            self._watcher.cancel()
        if not self.stopped or self._task is None:
            return False
        remaining = self._task.uncancel()
        if exc_type is asyncio.CancelledError:
            return remaining == 0
        return False
