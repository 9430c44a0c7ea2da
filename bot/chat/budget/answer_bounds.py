"""The bounds an answer is held to while it streams: its length, its repetition, and the
server's own limit; each ends the answer with a notice and keeps what was said.

TURN_TIMEOUT, the outer bound in time, is the engine's (it cancels the whole turn).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.llm.repetition import RepetitionGuard
from bot.prompts import Prompts

# The finish reason of a server that stopped the answer at the limit the request carried.
SERVER_LIMIT = "length"


@dataclass
class AnswerBounds:
    """One turn's answer so far, as its bounds see it."""

    chars: int = 0
    guard: RepetitionGuard = field(default_factory=RepetitionGuard)

    def take(self, text: str, limit: int, prompts: Prompts) -> tuple[str, str | None]:
        """The part of `text` the answer keeps, and the notice that ends it there (or None).

        `limit` is MAX_ANSWER_CHARS: the answer is cut at it. A passage repeated over and over
        ends it after the piece that showed the loop.
        """
        piece = text[: max(0, limit - self.chars)]
        self.chars += len(piece)
        if len(piece) < len(text):
            return piece, prompts.format("answer_length_limit", limit=limit)
        if self.guard.feed(piece):
            return piece, prompts["answer_repetition"]
        return piece, None


def server_limit_notice(finish: str | None, tokens: int, prompts: Prompts) -> str | None:
    """The notice for an answer the server ended at its token limit (`tokens`), else None."""
    if finish != SERVER_LIMIT:
        return None
    return prompts.format("answer_token_limit", tokens=tokens)
