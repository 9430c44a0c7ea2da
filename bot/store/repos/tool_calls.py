"""Tool calls the engine ran: what was called, with what, whether it worked, what it cited."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row

MAX_ARGUMENTS_CHARS = 2000
MAX_ERROR_CHARS = 300
MAX_SOURCES = 50
MAX_SOURCE_FIELD_CHARS = 500


@dataclass(frozen=True)
class ToolCallSource:
    """A web source a tool call returned."""

    title: str
    url: str


@dataclass(frozen=True)
class ToolCallRecord:
    """One stored tool call.

    `message_id` is the user message whose turn made the call (the answer replies to it);
    `arguments` is the arguments' JSON, cut at MAX_ARGUMENTS_CHARS.
    """

    id: int
    space_id: str
    session_id: str
    message_id: int | None
    call_id: str
    tool: str
    arguments: str
    ok: bool
    error: str | None
    sources: list[ToolCallSource]
    duration_ms: int | None
    created_at: str
    # Set when the call asked its member first: the verdict and who gave it.
    approval: str | None = None
    approved_by: str | None = None


_COLUMNS = (
    "id, space_id, session_id, message_id, call_id, tool, arguments_json, ok, error, "
    "sources_json, duration_ms, created_at, approval, approved_by"
)


def _sources(text: str) -> list[ToolCallSource]:
    try:
        items = json.loads(text or "[]")
    except ValueError:
        return []
    return [
        ToolCallSource(str(item.get("title", "")), str(item.get("url", "")))
        for item in items
        if isinstance(item, dict)
    ]


def _record(row: Row) -> ToolCallRecord:
    return ToolCallRecord(
        id=row["id"],
        space_id=row["space_id"],
        session_id=row["session_id"],
        message_id=row["message_id"],
        call_id=row["call_id"],
        tool=row["tool"],
        arguments=row["arguments_json"],
        ok=bool(row["ok"]),
        error=row["error"],
        sources=_sources(row["sources_json"]),
        duration_ms=row["duration_ms"],
        created_at=row["created_at"],
        approval=row["approval"],
        approved_by=row["approved_by"],
    )


def bounded_arguments(arguments: dict[str, Any]) -> str:
    """The arguments as JSON, cut at MAX_ARGUMENTS_CHARS (a marker says it was cut)."""
    text = json.dumps(arguments, ensure_ascii=False, default=str)
    if len(text) <= MAX_ARGUMENTS_CHARS:
        return text
    return text[: MAX_ARGUMENTS_CHARS - 1] + "…"


def short_error(text: str) -> str:
    """A failed result's message: the `error` of a `{"error": ...}` result, else its text, cut."""
    message = text
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
        message = parsed["error"]
    message = " ".join(message.split())
    return message if len(message) <= MAX_ERROR_CHARS else message[: MAX_ERROR_CHARS - 1] + "…"


class ToolCallRepository:
    """Writes one row per tool call and reads them back per session."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        space: str,
        session_id: str,
        *,
        message_id: int | None,
        call_id: str,
        tool: str,
        arguments: dict[str, Any],
        ok: bool,
        error_text: str | None = None,
        sources: Sequence[ToolCallSource] = (),
        duration_ms: int | None = None,
        created_at: str | None = None,
        approval: str | None = None,
        approved_by: str | None = None,
    ) -> int:
        """Store a call (arguments and error bounded here); returns its id. `approval` and
        `approved_by`: the member's decision when the tool asked first.

        The session must be in `space` (a foreign key refuses anything else).
        """
        kept = [
            {"title": s.title[:MAX_SOURCE_FIELD_CHARS], "url": s.url[:MAX_SOURCE_FIELD_CHARS]}
            for s in sources[:MAX_SOURCES]
        ]
        return await self._db.insert(
            "INSERT INTO tool_calls (space_id, session_id, message_id, call_id, tool, "
            "arguments_json, ok, error, sources_json, duration_ms, created_at, approval, "
            "approved_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                space,
                session_id,
                message_id,
                call_id[:200],
                tool[:200],
                bounded_arguments(arguments),
                1 if ok else 0,
                None if ok or error_text is None else short_error(error_text),
                json.dumps(kept, ensure_ascii=False),
                duration_ms,
                created_at or utcnow(),
                approval,
                None if approved_by is None else approved_by[:200],
            ),
        )

    async def for_messages(
        self, space: str, session_id: str, message_ids: Sequence[int]
    ) -> list[ToolCallRecord]:
        """The calls made in the turns of these (user) messages, in call order."""
        if not message_ids:
            return []
        marks = ",".join("?" for _ in message_ids)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM tool_calls WHERE space_id = ? AND session_id = ? "
            f"AND message_id IN ({marks}) ORDER BY id",
            (space, session_id, *message_ids),
        )
        return [_record(row) for row in rows]

    async def for_session(self, space: str, session_id: str) -> list[ToolCallRecord]:
        """Every call of a session, in call order."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM tool_calls WHERE space_id = ? AND session_id = ? ORDER BY id",
            (space, session_id),
        )
        return [_record(row) for row in rows]
