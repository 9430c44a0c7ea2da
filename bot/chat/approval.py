"""Tools with side effects ask first: which calls wait for their member, and what they get.

A call of a tool marked `confirm` (an MCP server's `"confirm": true`; the notes-writing tools
while CONFIRM_NOTE_WRITES is on) runs only once its member allowed it through the turn's
`Approver`. Denied, unanswered or unaskable calls return a tool result that says so, so the
model answers without them. Every decision is logged here and stored with the call.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from bot.config import Settings
from bot.prompts import Prompts
from bot.tools.core import Tool
from bot.turn.approval import ApprovalAsk, Approver, Decision
from bot.turn.tool_result import ToolResult

log = logging.getLogger(__name__)

# The approver answers a timeout itself; this much later the engine stops waiting anyway.
_GRACE = 5.0


def needs_approval(tool: Tool | None, settings: Settings) -> bool:
    """Whether a call of `tool` waits for its member's Allow under these settings."""
    if tool is None:
        return False
    if tool.confirm == "note_writes":
        return settings.confirm_note_writes
    return tool.confirm == "always"


@dataclass(frozen=True)
class Asked:
    """A question's decision, and the tool result given instead of running (None: run)."""

    decision: Decision
    refusal: ToolResult | None = None


async def _decision(approver: Approver | None, ask: ApprovalAsk) -> Decision:
    """The approver's decision; nobody to ask, or a question that could not be asked: unasked."""
    if approver is None:
        return Decision("unasked")
    try:
        async with asyncio.timeout(ask.timeout + _GRACE):
            return await approver(ask)
    except TimeoutError:
        return Decision("timeout")
    except Exception:
        log.exception("could not ask for approval of %s", ask.tool)
        return Decision("unasked")


async def ask_member(
    approver: Approver | None, ask: ApprovalAsk, prompts: Prompts, *, session_id: str
) -> Asked:
    """Ask the turn's member about one call; logs the decision (ids, never the arguments)."""
    decision = await _decision(approver, ask)
    log.info(
        "approval of %s in session %s: %s (decided by %s, asked %s)",
        ask.tool,
        session_id,
        decision.verdict,
        decision.decided_by or "nobody",
        ask.member_id or "nobody",
    )
    if decision.allowed:
        return Asked(decision)
    member = ask.member_name or ask.member_id or prompts["tool_approval_someone"]
    key = f"tool_approval_{decision.verdict}"
    text = prompts.format(key, tool=ask.tool, member=member, seconds=f"{ask.timeout:g}")
    return Asked(decision, ToolResult.error(text))
