"""What a tool call produced: the text the model receives, failure, sources, paging, events.

It lives with the turn's vocabulary because hooks (in memory/ and tools/) receive it; the
tools build it (`bot.tools.paging.paged_tool_result` reads the paging fields from a footer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from bot.turn.events import Event


@dataclass(frozen=True)
class Source:
    """A web source a tool result points at (a search hit, a fetched page)."""

    title: str
    url: str


@dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome; `text` is exactly what the model receives, `events` what the
    engine sends the front ends once the call is done (e.g. a saved fact's receipt)."""

    text: str
    failed: bool = False
    sources: tuple[Source, ...] = ()
    has_more: bool = False
    next_token: str | None = None
    events: tuple[Event, ...] = ()

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """A failed result whose text is the JSON object `{"error": message}`."""
        return cls(json.dumps({"error": message}, ensure_ascii=False), failed=True)
