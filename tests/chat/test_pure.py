"""Pure helpers of the chat layer: tokens and the truncation policy of tool results."""

from __future__ import annotations

import json

from bot.chat.budget.tokens import estimate_tokens, truncate_to_tokens
from bot.chat.budget.tool_budget import (
    MAX_TOOL_RESULT_CHARS,
    PAGE_INFO_MARKER,
    ToolBudget,
    trim_tool_result,
)
from bot.chat.budget.turn_fit import ToolText
from bot.turn.tool_result import ToolResult


def test_token_estimate_counts_japanese_per_character() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("今日は良い天気") == 7
    assert estimate_tokens("a" * 400) == 100


def test_truncate_to_tokens_cuts_at_a_boundary() -> None:
    text = "alpha beta gamma delta " * 50
    cut = truncate_to_tokens(text, 20)
    assert estimate_tokens(cut) <= 21 and cut.endswith("…")
    assert cut[:-1].split()[-1] in {"alpha", "beta", "gamma", "delta"}


def test_unpaged_result_is_trimmed_at_a_paragraph() -> None:
    text = ("para " * 200 + "\n\n") * 10
    result = trim_tool_result(ToolResult(text))
    assert not result.failed
    trimmed = result.text
    assert len(trimmed) <= MAX_TOOL_RESULT_CHARS
    assert trimmed.endswith("[truncated]")
    assert trimmed.split("\n…")[0].endswith("para")


def test_paged_result_is_never_cut() -> None:
    ok = ToolResult("x" * 5000 + PAGE_INFO_MARKER + "has_more: true\nnext_token: t")
    assert trim_tool_result(ok) == ok
    oversize = ToolResult("x" * 7000 + PAGE_INFO_MARKER + "has_more: true\nnext_token: t")
    refused = trim_tool_result(oversize)
    assert refused.failed, "the model gets an error, the front ends show a failure"
    assert "smaller max_chars" in json.loads(refused.text)["error"]


def test_budget_counts_rounds_and_chars() -> None:
    budget = ToolBudget()
    assert budget.tools_allowed
    budget.take(ToolText("", "x" * 24000), [("", "")])
    assert budget.chars == 24000
    assert budget.chars_exhausted and not budget.tools_allowed
    rounds = ToolBudget(rounds=5)
    assert rounds.rounds_exhausted
