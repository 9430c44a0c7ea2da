"""What a tool call produced: the text the model receives, failure, sources and paging."""

from __future__ import annotations

import json
from dataclasses import dataclass

from bot.tools.paging import parse_paged_result


@dataclass(frozen=True)
class Source:
    """A web source a tool result points at (a search hit, a fetched page)."""

    title: str
    url: str


@dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome; `text` is exactly what the model receives."""

    text: str
    failed: bool = False
    sources: tuple[Source, ...] = ()
    has_more: bool = False
    next_token: str | None = None

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """A failed result whose text is the JSON object `{"error": message}`."""
        return cls(json.dumps({"error": message}, ensure_ascii=False), failed=True)

    @classmethod
    def from_page(cls, text: str) -> ToolResult:
        """A successful result, with the paging fields read from its page-info footer."""
        _, meta = parse_paged_result(text)
        token = meta.get("next_token")
        return cls(
            text,
            has_more=meta.get("has_more") is True,
            next_token=token if isinstance(token, str) else None,
        )
