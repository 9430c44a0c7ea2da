"""How many tokens a model may answer with: sent with every call as the model's own limit.

A chat answer gets the share of the window the prompt budget keeps free for it (the answer
reserve, bot/chat/budget/allocation.py fits the prompt into the rest); calls whose answer is a few
words get less. The server stops the model there (Ollama `options.num_predict`, OpenAI-style
`max_tokens`), so a model that does not stop by itself ends in the server, long before a
turn's outer bounds (TURN_TIMEOUT, MAX_ANSWER_CHARS).
"""

from __future__ import annotations

from types import MappingProxyType

# The answer needs room too: this share of the window (at least MIN_ANSWER_RESERVE tokens) is
# kept free for it; the prompt gets the rest.
ANSWER_RESERVE_SHARE = 0.2
MIN_ANSWER_RESERVE = 512

# Calls asked for a few words. Room for a reasoning model's thinking before them is kept:
# cut inside it, the call would answer nothing (tagging then falls back to its keywords).
SHORT_ANSWERS = MappingProxyType({"tagging": 256, "topic": 512, "connection_test": 256})


def answer_reserve(window: int) -> int:
    """Real tokens of the window kept free for the model's answer."""
    return max(MIN_ANSWER_RESERVE, int(window * ANSWER_RESERVE_SHARE))


def answer_limit(purpose: str, window: int) -> int:
    """The tokens a call made for `purpose` may answer with, in a window of `window` tokens."""
    reserve = answer_reserve(window)
    return min(reserve, SHORT_ANSWERS.get(purpose, reserve))
