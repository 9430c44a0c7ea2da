"""The project's token estimator, as the chat modules import it (it lives in bot.llm.tokens)."""

from __future__ import annotations

from bot.llm.tokens import (
    MESSAGE_OVERHEAD,
    estimate_tokens,
    message_tokens,
    prompt_tokens,
    truncate_to_tokens,
)

__all__ = [
    "MESSAGE_OVERHEAD",
    "estimate_tokens",
    "message_tokens",
    "prompt_tokens",
    "truncate_to_tokens",
]
