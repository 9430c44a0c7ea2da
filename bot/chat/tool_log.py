"""The tool call log: a tool hook that stores every finished call as a `tool_calls` row, and
one that lists each approval decision among the API logs."""

from __future__ import annotations

import json
import logging

from bot.store.repos.api_logs import ApiLogRepository
from bot.store.repos.tool_calls import ToolCallRepository, ToolCallSource
from bot.turn.hooks import Emit, ToolOutcome

log = logging.getLogger(__name__)


class RecordToolCallHook:
    """Stores each tool call with its outcome, sources and duration (never fails the turn)."""

    def __init__(self, tool_calls: ToolCallRepository) -> None:
        self._tool_calls = tool_calls

    async def __call__(self, outcome: ToolOutcome, emit: Emit) -> None:
        """Write the call's row."""
        del emit  # nothing to announce
        result = outcome.result
        try:
            await self._tool_calls.add(
                outcome.space_id,
                outcome.session_id,
                message_id=outcome.message_id,
                call_id=outcome.call_id,
                tool=outcome.name,
                arguments=outcome.arguments,
                ok=not result.failed,
                error_text=result.text if result.failed else None,
                sources=[ToolCallSource(s.title, s.url) for s in result.sources],
                duration_ms=outcome.duration_ms,
                approval=None if outcome.approval is None else outcome.approval.verdict,
                approved_by=None if outcome.approval is None else outcome.approval.decided_by,
            )
        except Exception:
            log.exception(
                "could not record the %s call in session %s", outcome.name, outcome.session_id
            )


APPROVAL_PURPOSE = "approval"


class RecordApprovalHook:
    """Lists each decision of a call that asked first among the API logs (space, session, who
    decided; the arguments stay in the call's own row); a refusal reads as the row's error."""

    def __init__(self, api_logs: ApiLogRepository) -> None:
        self._logs = api_logs

    async def __call__(self, outcome: ToolOutcome, emit: Emit) -> None:
        """Write the decision's row, if the call asked first."""
        del emit  # nothing to announce
        decision = outcome.approval
        if decision is None:
            return
        request = {
            "tool": outcome.name,
            "call_id": outcome.call_id,
            "verdict": decision.verdict,
            "decided_by": decision.decided_by,
        }
        try:
            await self._logs.add(
                session_id=outcome.session_id,
                model=f"{APPROVAL_PURPOSE}:{outcome.name}"[:200],
                purpose=APPROVAL_PURPOSE,
                request_json=json.dumps(request, ensure_ascii=False),
                response_text=decision.verdict,
                error=None if decision.allowed else f"not run: {decision.verdict}",
                latency_ms=outcome.duration_ms or 0,
            )
        except Exception:
            log.exception(
                "could not log the approval of %s in session %s", outcome.name, outcome.session_id
            )
