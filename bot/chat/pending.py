"""Turns waiting for their answer: user messages stored but not yet answered, per conversation.

Turns of one conversation run one at a time, and a message is stored when it arrives, so a
burst leaves messages waiting behind the running turn. Until its turn ends, such a message must
stay live and whole: the summariser summarises and archives only what comes before the oldest
pending message of the conversation (bot/chat/summarize.py).
"""

from __future__ import annotations


class PendingTurns:
    """The ids of the stored user messages whose turn has not ended, per (space, session)."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, str], set[int]] = {}

    def add(self, space: str, session_id: str, message_id: int) -> None:
        """The turn of `message_id` waits for (or is writing) its answer."""
        self._pending.setdefault((space, session_id), set()).add(message_id)

    def done(self, space: str, session_id: str, message_id: int) -> None:
        """The turn of `message_id` ended: answered, failed or stopped."""
        key = (space, session_id)
        waiting = self._pending.get(key)
        if waiting is None:
            return
        waiting.discard(message_id)
        if not waiting:
            del self._pending[key]

    def oldest(self, space: str, session_id: str) -> int | None:
        """The conversation's oldest pending message id (None: no turn is pending)."""
        waiting = self._pending.get((space, session_id))
        return min(waiting) if waiting else None

    def __len__(self) -> int:
        return sum(len(waiting) for waiting in self._pending.values())
