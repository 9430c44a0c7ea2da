"""Seed 000's truncation policy: each result within its limit, a turn's results within a cap.

Paged results are never cut to their own limit (the tools fit them; an oversize one becomes a
retryable error). The turn's cap is never crossed: the result that would cross it is cut to the
characters that remain, and no further tool runs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.chat.budget.turn_fit import ToolText
from bot.tools.paging import FOOTER_SEPARATOR
from bot.turn.tool_result import ToolResult

PAGE_INFO_MARKER = "\n---page-info---\n"
MAX_TOOL_RESULT_CHARS = 6000
MAX_TOOL_CONTEXT_CHARS = 24000
MAX_TOOL_ROUNDS = 5
TRIM_MARKER = "\n…[truncated]"
# Below this much room a result could hold little besides its cut marker: the cap counts as
# reached and the next call does not run.
MIN_RESULT_ROOM = 500

_META_LINE = re.compile(r"[a-z_]+: \S+")


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


def split_footer(text: str) -> tuple[str, str]:
    """A result's body and its page-info footer ('' when it has none)."""
    body, separator, tail = text.rpartition(PAGE_INFO_MARKER)
    if not separator or not all(_META_LINE.fullmatch(line) for line in tail.split("\n")):
        return text, ""
    return body, separator + tail


def resume_footer(footer: str, start_token: str | None) -> str:
    """The footer for a cut page: its next_token resumes at the start of the page.

    The tokens are opaque and tool-specific, so the only honest resume point for a page that
    was cut is where the page began: the token the call was made with. Without one (a first
    page) there is no token to give, and the footer goes.
    """
    if not start_token:
        return ""
    kept = [
        line
        for line in footer.partition(PAGE_INFO_MARKER)[2].split("\n")
        if line and not line.startswith(("has_more:", "next_token:"))
    ]
    lines = ["has_more: true", f"next_token: {start_token}", *kept]
    return FOOTER_SEPARATOR + "\n".join(lines)


def cut_to_room(item: ToolText, room: int, tails: Sequence[tuple[str, str]]) -> ToolText:
    """`item` with its body cut so body + footer fit `room` characters (its head not counted).

    `tails` are (footer, cut_tail) pairs to end the cut body with, best first: the first whose
    footer leaves room is used; the last should be short enough for any room worth a call.
    """
    for footer, cut_tail in tails:
        keep = room - len(footer)
        if keep >= 0:
            return replace(item, body=item.body[:keep], footer=footer, cut_tail=cut_tail)
    footer, cut_tail = tails[-1]
    return replace(item, body="", footer=footer[: max(0, room)], cut_tail=cut_tail)


def counted_chars(item: ToolText) -> int:
    """The characters of a tool message the turn's cap counts: all but the engine's head."""
    return len(item.body) + len(item.footer)


@dataclass
class ToolBudget:
    """Counts tool rounds and result characters of one turn."""

    max_rounds: int = MAX_TOOL_ROUNDS
    max_chars: int = MAX_TOOL_CONTEXT_CHARS
    rounds: int = 0
    chars: int = 0
    min_room: int = MIN_RESULT_ROOM

    @property
    def room(self) -> int:
        """Result characters this turn may still hand to the model."""
        return max(0, self.max_chars - self.chars)

    @property
    def chars_exhausted(self) -> bool:
        """No further tool call may run in this turn."""
        return self.room < self.min_room

    @property
    def rounds_exhausted(self) -> bool:
        """The model must answer without tools now."""
        return self.rounds >= self.max_rounds

    @property
    def tools_allowed(self) -> bool:
        """Whether the next model call is offered tools."""
        return not (self.chars_exhausted or self.rounds_exhausted)

    def take(
        self, item: ToolText, tails: Sequence[tuple[str, str]], closed_tail: str = ""
    ) -> ToolText:
        """`item` as it may reach the model: whole while it fits, else cut to the room left.

        A cut spends the budget: no further call runs in this turn; `closed_tail` then ends it
        in the requests that offer no tools (it names no call).
        """
        if counted_chars(item) <= self.room:
            self.chars += counted_chars(item)
            return item
        cut = cut_to_room(item, self.room, tails)
        self.chars = self.max_chars
        closed = closed_tail or cut.closed_tail
        # The closed form must stay within the cap too: a longer tail takes from the body.
        keep = len(cut.body) - max(0, len(closed) - len(cut.footer))
        return replace(cut, body=cut.body[: max(0, keep)], precut=True, closed_tail=closed)
