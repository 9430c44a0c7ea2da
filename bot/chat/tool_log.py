"""The tool call log: a tool hook that stores every finished call as a `tool_calls` row."""

from __future__ import annotations

import logging

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
            )
        except Exception:
            log.exception(
                "could not record the %s call in session %s", outcome.name, outcome.session_id
            )
