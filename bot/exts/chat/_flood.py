"""How many turns one user may have at once, across threads (helper of the chat extension).

Pure (no discord, no event loop). A turn counts from the moment its message is accepted until
its reply is done, waiting in a thread's queue included, so a flood of messages can neither
run nor queue more than `limit` model calls for one user. A refused user is told once, not
once per message: the next notice comes only after one of their turns has finished.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class TurnSlot:
    """Whether a user may start another turn; if not, whether to tell them (once)."""

    allowed: bool
    notify: bool = False


@dataclass
class UserTurns:
    """Counts each user's accepted, unfinished turns."""

    _counts: dict[int, int] = field(default_factory=dict)
    _notified: set[int] = field(default_factory=set)

    def check(self, user_id: int, limit: int) -> TurnSlot:
        """May `user_id` start one more turn now? A refusal notifies only the first time."""
        if self._counts.get(user_id, 0) < limit:
            return TurnSlot(True)
        notify = user_id not in self._notified
        self._notified.add(user_id)
        return TurnSlot(False, notify)

    @contextmanager
    def hold(self, user_id: int) -> Iterator[None]:
        """Count one turn of `user_id` for the duration of the block."""
        self._counts[user_id] = self._counts.get(user_id, 0) + 1
        try:
            yield
        finally:
            left = self._counts[user_id] - 1
            if left:
                self._counts[user_id] = left
            else:
                del self._counts[user_id]
            self._notified.discard(user_id)

    def running(self, user_id: int) -> int:
        """How many turns of `user_id` are counted now."""
        return self._counts.get(user_id, 0)
