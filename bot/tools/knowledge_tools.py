"""The read_knowledge tool: the body and sources of an entry of the conversation's space (the
space is injected by the engine; another space's entry reads as unknown)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from bot.config import Settings
from bot.errors import ToolError
from bot.memory.knowledge import KnowledgeEntry, KnowledgeService
from bot.tools.core import ToolDisplay, ToolRegistry
from bot.tools.paging import (
    DEFAULT_TOKEN_TTL,
    MAX_TOOL_RESULT_CHARS,
    InvalidTokenError,
    format_paged_result,
    make_token,
    parse_token,
)
from bot.tools.room import ResultRoom, longest_fit, room_for

# Header and sources included, a result stays below the engine's 6,000-character cap.
MAX_BODY_CHARS = 4500
MAX_LISTED_SOURCES = 10
# Headings read for one page of the list; fewer are shown when they do not all fit.
LISTED_HEADINGS: Final = 50
# The list's continuation tokens are bound to this name (the tool lists and reads).
LIST_TOOL: Final = "read_knowledge"


def render_entry(entry: KnowledgeEntry) -> str:
    """An entry as read_knowledge returns it."""
    body = entry.summary.strip() or "(no summary text)"
    if len(body) > MAX_BODY_CHARS:
        body = body[:MAX_BODY_CHARS].rstrip() + "…"
    lines = [
        f"# {entry.title} (knowledge #{entry.id}, saved {entry.created_at[:10]})",
        f"Search query: {entry.query}",
        "",
        body,
    ]
    if entry.sources:
        lines += ["", "Sources:"]
        lines += [
            f"- {source.title} — {source.url}" for source in entry.sources[:MAX_LISTED_SOURCES]
        ]
    return "\n".join(lines)


def heading_line(entry: KnowledgeEntry) -> str:
    """An entry's line in the accumulated-knowledge list."""
    return f"- [#{entry.id}] {entry.title} ({entry.created_at[:10]})"


async def list_headings(
    knowledge: KnowledgeService,
    space: str,
    before_id: int | None,
    room: ResultRoom,
) -> str:
    """The space's headings newest first (below `before_id`), as many as fit `room`, paged."""
    entries = await knowledge.list(space, limit=LISTED_HEADINGS, before_id=before_id)
    if not entries:
        return "No accumulated knowledge entries." if before_id is None else "No older entries."
    lines = [heading_line(entry) for entry in entries]
    header = "Accumulated knowledge, newest first:\n"

    def render(count: int) -> str:
        token = make_token(LIST_TOOL, before_id=entries[count - 1].id) if count else None
        more = count < len(entries) or len(entries) == LISTED_HEADINGS
        return format_paged_result(header + "\n".join(lines[:count]), token if more else None)

    count = longest_fit(room, len(lines), render)
    if not count:
        raise ToolError("No room is left for the list of headings.", as_json=True)
    return render(count)


def register_knowledge_tools(
    registry: ToolRegistry,
    knowledge: KnowledgeService,
    settings: Callable[[], Settings] | None = None,
) -> None:
    """Offer read_knowledge (only when a database is present); `settings` give the result
    limit and the tokens' lifetime (the defaults without)."""

    async def read_knowledge(
        entry_id: int | None = None,
        continue_from: str | None = None,
        space_id: str | None = None,
        result_room: ResultRoom | None = None,
    ) -> str:
        """Read an accumulated-knowledge entry (earlier web search) listed by its #id.

        The context lists only the latest headings; read one when it is relevant.

        Args:
            entry_id: The number after '#' in the accumulated knowledge list; omit it to
                list every heading.
            continue_from: The next_token of the previous list.
        """
        limit, ttl = MAX_TOOL_RESULT_CHARS, DEFAULT_TOKEN_TTL
        if settings is not None:
            current = settings()
            limit, ttl = current.max_tool_result_chars, current.pagination_token_ttl
        if entry_id is None and space_id:
            before_id = None
            if continue_from:
                try:
                    payload = parse_token(continue_from, LIST_TOOL, max_age=ttl)
                except InvalidTokenError as exc:
                    raise ToolError(str(exc)) from None
                before_id = payload["before_id"]
            room = room_for(result_room, limit)
            return await list_headings(knowledge, space_id, before_id, room)
        entry = (
            None if not space_id or entry_id is None else await knowledge.get(space_id, entry_id)
        )
        if entry is None:
            raise ToolError(
                f"No knowledge entry #{entry_id}. Use an id from the accumulated knowledge list.",
                as_json=True,
            )
        return render_entry(entry)

    def label(arguments: dict[str, Any]) -> str:
        entry_id = arguments.get("entry_id")
        return f"read_knowledge: #{entry_id}" if entry_id is not None else "read_knowledge: list"

    registry.register(read_knowledge, display=ToolDisplay("📚", label))
