"""A tool result as a fittable tool message, with the markers each way of shortening it ends
with: a cut names the call that reads on from exactly there (the tool's offset, or the token the
page was read with), a digest the call that reads it whole, and in a request that offers no
tools a marker only says what is left out."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.chat.budget.tool_budget import resume_footer, split_footer
from bot.chat.budget.turn_fit import ToolText
from bot.llm.types import ToolCall
from bot.prompts import Prompts
from bot.tools.core import Tool
from bot.turn.tool_result import ToolResult


@dataclass(frozen=True)
class MarkedResult:
    """The tool message, the (footer, tail) pairs the turn's cap may cut it with, best first,
    and the tail of that cut in a request that offers no tools."""

    item: ToolText
    budget_tails: list[tuple[str, str]]
    budget_closed: str


def marked_result(
    call: ToolCall,
    arguments: dict[str, Any],
    result: ToolResult,
    round_number: int,
    tool: Tool | None,
    *,
    prompts: Prompts,
    cap: int,
) -> MarkedResult:
    """The result of `call` as this turn's tool message, with its markers."""
    head = prompts.format("tool_result_prefix", name=call.name) + "\n"
    body, footer = split_footer(result.text)
    start = arguments.get("continue_from")
    paged = bool(footer) or (tool is not None and tool.paged)
    token_footer = (
        resume_footer(footer, start)
        if paged and not result.failed and isinstance(start, str)
        else ""
    )

    def tails(resume_with: str) -> tuple[str, str]:
        hint = prompts.format(
            "tool_resume_token" if resume_with else "tool_resume_call", name=call.name
        )
        budget_cut = prompts.format("tool_result_cut", limit=cap, resume=hint)
        window_cut = prompts.format("tool_result_shortened", resume=hint)
        return f"\n{budget_cut}{resume_with}", f"\n{window_cut}{resume_with}"

    options = [tails(token_footer)] + ([tails("")] if token_footer else [])
    again = prompts.format("tool_resume_call", name=call.name)
    item = ToolText(
        head,
        body,
        footer,
        options[0][1],
        round_number,
        closed_tail=f"\n{prompts['tool_result_left_out']}{token_footer}",
        digest_tail=f"\n{prompts.format('tool_result_digest', resume=again)}",
        resume=_offset_resume(call, arguments, body, tool, prompts, result.failed),
    )
    closed = f"\n{prompts.format('tool_result_cut_closed', limit=cap)}{token_footer}"
    return MarkedResult(item, options, closed)


def _offset_resume(  # noqa: PLR0917 - what the marker is made of
    call: ToolCall,
    arguments: dict[str, Any],
    body: str,
    tool: Tool | None,
    prompts: Prompts,
    failed: bool,
) -> Callable[[int], str] | None:
    """The tail of a cut after `keep` characters naming the call that reads on from there,
    for a tool that resumes at an offset; None for every other tool."""
    maker = tool.resume if tool is not None else None
    if maker is None or failed:
        return None

    def tail(keep: int) -> str:
        resumed = maker(arguments, body, keep)
        if resumed is None:
            hint = prompts.format("tool_resume_call", name=call.name)
        else:
            shown = json.dumps(resumed, ensure_ascii=False)
            hint = prompts.format("tool_resume_at", name=call.name, arguments=shown)
        return f"\n{prompts.format('tool_result_shortened', resume=hint)}"

    if maker(arguments, body, 0) is None:
        return None
    return tail
