"""The room one tool result has in this turn's prompt, as the engine hands it to a tool.

A tool that takes a `result_room` parameter (injected by the engine, never shown to the model)
fits its page to it as well as to MAX_TOOL_RESULT_CHARS: `chars` is the most characters the
result may have (the per-result limit and what the turn's 24,000-character cap leaves), and
`tokens` the most estimated tokens it may take in the window (None: no window limit, as when
a tool runs outside a turn). A page that fits is never cut afterwards, so its next_token
resumes exactly where it ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bot.llm.tokens import estimate_tokens

ROOM_PARAM = "result_room"


@dataclass(frozen=True)
class ResultRoom:
    """Characters and estimated tokens one tool result may use."""

    chars: int
    tokens: int | None = None

    def fits(self, text: str) -> bool:
        """Whether `text` fits both limits."""
        if len(text) > self.chars:
            return False
        return self.tokens is None or estimate_tokens(text) <= self.tokens

    def safe_chars(self) -> int:
        """A character limit that fits the token limit whatever the script (≤ 1 char a token)."""
        if self.tokens is None:
            return self.chars
        return max(0, min(self.chars, self.tokens - 1))


def room_for(room: ResultRoom | None, limit: int) -> ResultRoom:
    """The room a tool fits its result to: the engine's, never above the tool's own `limit`."""
    if room is None:
        return ResultRoom(limit)
    return ResultRoom(min(limit, room.chars), room.tokens)


def longest_fit(room: ResultRoom, size: int, render: Callable[[int], str]) -> int | None:
    """The largest n ≤ `size` whose `render(n)` fits `room` (None when not even 0 does).

    `render(n)` is the result with n units of body; its length grows with n.
    """
    if room.fits(render(size)):
        return size
    if not room.fits(render(0)):
        return None
    low, high = 0, size
    while low < high:
        middle = (low + high + 1) // 2
        if room.fits(render(middle)):
            low = middle
        else:
            high = middle - 1
    return low
