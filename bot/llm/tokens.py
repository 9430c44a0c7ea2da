"""Token estimates without a tokenizer download: CJK ~1 token per character, else ~4 chars.

These are the project's estimator; LLMGateway.token_factor(model) says how many real tokens of
a given model one estimated token is (learned from the counts the backend reports).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

MESSAGE_OVERHEAD = 4


def estimate_tokens(text: str) -> int:
    """A conservative token count for mixed Japanese/English text."""
    if not text:
        return 0
    length = len(text)
    if text.isascii():
        return (length + 3) // 4
    # CJK characters take 3 bytes in UTF-8: the extra bytes count them without a regex scan.
    extra = len(text.encode("utf-8", "surrogatepass")) - length
    wide = min(length, extra // 2)
    return wide + (length - wide + 3) // 4


def message_tokens(message: dict[str, Any]) -> int:
    """Estimated tokens of one chat message including its framing."""
    content = message.get("content") or ""
    total = MESSAGE_OVERHEAD + estimate_tokens(
        content if isinstance(content, str) else str(content)
    )
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        total += estimate_tokens(function.get("name", "")) + estimate_tokens(
            str(function.get("arguments", ""))
        )
    return total


def prompt_tokens(
    messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None
) -> int:
    """Estimated tokens of a whole request: its messages plus the JSON of its tool schemas."""
    return sum(message_tokens(message) for message in messages) + tool_tokens(tools)


def tool_tokens(tools: Sequence[dict[str, Any]] | None) -> int:
    """Estimated tokens of a request's tool schemas (their JSON)."""
    return estimate_tokens(json.dumps(list(tools), ensure_ascii=False)) if tools else 0


def truncate_to_tokens(text: str, budget: int) -> str:
    """The longest prefix of `text` (cut at a line or word end when possible) within `budget`."""
    if estimate_tokens(text) <= budget:
        return text
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    cut = text[:low]
    for separator in ("\n", " ", "。"):
        index = cut.rfind(separator)
        if index > low * 0.7:
            return cut[: index + 1].rstrip() + "…"
    return cut + "…"
