"""The vocabulary memory and tools use to hook into a turn, without importing the engine."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from bot.store.repos.messages import StoredMessage
from bot.turn.approval import Decision
from bot.turn.events import Event
from bot.turn.tool_result import ToolResult

Emit = Callable[[Event], None]


@dataclass(frozen=True)
class ToolOutcome:
    """A finished tool call, for hooks such as knowledge saving and the tool call log.

    `message_id` is the user message whose turn made the call; `duration_ms` how long the
    tool ran; `approval` its member's decision when the tool asked first.
    """

    space_id: str
    session_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    result: ToolResult
    user_text: str
    message_id: int | None = None
    duration_ms: int | None = None
    approval: Decision | None = None


@dataclass(frozen=True)
class TurnResult:
    """A completed turn, for background hooks (summaries, tags, word pool).

    `pool_channel_id` is the channel whose word pool the conversation feeds (a thread's parent
    channel, else its own channel; None outside Discord).
    """

    space_id: str
    session_id: str
    user_message: StoredMessage
    answer: StoredMessage
    tool_names: tuple[str, ...] = ()
    pool_channel_id: int | None = None


class ToolHook(Protocol):
    """Runs after a tool result, inside the turn; may emit events (e.g. save_knowledge)."""

    async def __call__(self, outcome: ToolOutcome, emit: Emit) -> None:
        """React to a tool result."""
        ...


TurnHook = Callable[[TurnResult], Coroutine[Any, Any, None]]
