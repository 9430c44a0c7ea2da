"""Seed 000's truncation policy: paged results pass whole, others are trimmed, a turn is capped."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bot.tools.result import ToolResult

PAGE_INFO_MARKER = "\n---page-info---\n"
MAX_TOOL_RESULT_CHARS = 6000
MAX_TOOL_CONTEXT_CHARS = 24000
MAX_TOOL_ROUNDS = 5
TRIM_MARKER = "\n…[truncated]"


def is_paged(result: str) -> bool:
    """True for a paged result (it carries the page-info footer)."""
    return PAGE_INFO_MARKER in result


def trim_tool_result(result: ToolResult, limit: int = MAX_TOOL_RESULT_CHARS) -> ToolResult:
    """Fit a result to `limit`: paged results are never cut (an oversize one becomes an error)."""
    text = result.text
    if len(text) <= limit:
        return result
    if is_paged(text):
        return ToolResult.error(
            f"The paged result exceeded {limit} characters. Call the same tool again "
            "with a smaller max_chars; nothing was skipped."
        )
    room = limit - len(TRIM_MARKER)
    cut = text[:room]
    for separator in ("\n\n", "\n", ". ", "。", " "):
        index = cut.rfind(separator)
        if index >= room * 0.6:
            cut = cut[: index + len(separator)].rstrip()
            break
    return replace(result, text=cut + TRIM_MARKER)


@dataclass
class ToolBudget:
    """Counts tool rounds and result characters of one turn."""

    max_rounds: int = MAX_TOOL_ROUNDS
    max_chars: int = MAX_TOOL_CONTEXT_CHARS
    rounds: int = 0
    chars: int = 0

    @property
    def chars_exhausted(self) -> bool:
        """No further tool call may run in this turn."""
        return self.chars >= self.max_chars

    @property
    def rounds_exhausted(self) -> bool:
        """The model must answer without tools now."""
        return self.rounds >= self.max_rounds

    @property
    def tools_allowed(self) -> bool:
        """Whether the next model call is offered tools."""
        return not (self.chars_exhausted or self.rounds_exhausted)

    def spend(self, result: str) -> None:
        """Account for one result handed to the model."""
        self.chars += len(result)
