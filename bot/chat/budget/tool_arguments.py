"""Tool calls whose arguments are too large to carry: refused before they run (pure).

The model's call is repeated to it in every later request of the turn, so its arguments take
window room: a call may carry at most MAX_TOOL_ARGUMENT_CHARS characters of arguments, and
fewer when the window has less room left (a page is kept for its result). A refused call does
not run; the model is told its size, the limit and how to retry, and the repeated call carries
a short stand-in for its arguments.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot.chat.budget.allocation import CALL_RESERVE_TOKENS, PAGE_TOKENS
from bot.chat.budget.tokens import estimate_tokens
from bot.llm.litellm_backend import arguments_text
from bot.llm.types import ToolCall

log = logging.getLogger(__name__)

# About 4,000 tokens of English: a long note or a page of code, well within a 16k window.
MAX_TOOL_ARGUMENT_CHARS = 16000
# Argument values up to this long are repeated as they were; longer ones by their size only.
STAND_IN_CHARS = 120


@dataclass(frozen=True)
class Refusal:
    """Why a call was refused: the characters its arguments have and the most it may have."""

    size: int
    limit: int


@dataclass(frozen=True)
class ScreenedCalls:
    """A round's calls as the turn repeats them, and the refused ones by their position."""

    calls: list[ToolCall]
    refused: dict[int, Refusal] = field(default_factory=dict)


def screen_calls(calls: Sequence[ToolCall], room: int) -> ScreenedCalls:
    """Refuse every call whose arguments exceed the limit or the `room` (tokens) left for them."""
    screened: list[ToolCall] = []
    refused: dict[int, Refusal] = {}
    # Any call may carry the little a call is allowed (CALL_RESERVE_TOKENS); more only while a
    # page for its result still fits after it.
    left = room - PAGE_TOKENS
    for index, call in enumerate(calls):
        text = arguments_text(call.arguments)
        limit = argument_limit(text, max(CALL_RESERVE_TOKENS, left))
        if len(text) <= limit:
            left -= estimate_tokens(text)
            screened.append(call)
            continue
        log.warning(
            "refused a %s call with %d characters of arguments (at most %d)",
            call.name,
            len(text),
            limit,
        )
        refused[index] = Refusal(len(text), limit)
        screened.append(replace(call, arguments=stand_in(call.arguments)))
    return ScreenedCalls(screened, refused)


def argument_limit(text: str, tokens: int) -> int:
    """The most characters of `text` a call may carry: the limit, or what fits `tokens`."""
    if len(text) <= MAX_TOOL_ARGUMENT_CHARS and estimate_tokens(text) <= tokens:
        return MAX_TOOL_ARGUMENT_CHARS
    low, high = 0, min(len(text), MAX_TOOL_ARGUMENT_CHARS)
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(text[:middle]) <= tokens:
            low = middle
        else:
            high = middle - 1
    return low


def stand_in(arguments: dict[str, Any] | str) -> dict[str, Any]:
    """The arguments of a refused call as later requests repeat them: long values by size."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return {}
        arguments = parsed if isinstance(parsed, dict) else {}
    kept: dict[str, Any] = {}
    for key, value in list(arguments.items())[:20]:
        shown = json.dumps(value, ensure_ascii=False)
        kept[str(key)[:STAND_IN_CHARS]] = (
            value if len(shown) <= STAND_IN_CHARS else f"[{len(shown):,} characters, not sent]"
        )
    return kept
