"""The read_knowledge tool: the body and sources of an entry of the conversation's space (the
space is injected by the engine; another space's entry reads as unknown)."""

from __future__ import annotations

from typing import Any

from bot.errors import ToolError
from bot.memory.knowledge import KnowledgeEntry, KnowledgeService
from bot.tools.core import ToolDisplay, ToolRegistry

# Header and sources included, a result stays below the engine's 6,000-character cap.
MAX_BODY_CHARS = 4500
MAX_LISTED_SOURCES = 10


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


def register_knowledge_tools(registry: ToolRegistry, knowledge: KnowledgeService) -> None:
    """Offer read_knowledge (only when a database is present)."""

    async def read_knowledge(entry_id: int, space_id: str | None = None) -> str:
        """Read an accumulated-knowledge entry (earlier web search) listed by its #id.

        The context lists only headings; read one when it is relevant to the question.

        Args:
            entry_id: The number after '#' in the accumulated knowledge list.
        """
        entry = None if not space_id else await knowledge.get(space_id, entry_id)
        if entry is None:
            raise ToolError(
                f"No knowledge entry #{entry_id}. Use an id from the accumulated knowledge list.",
                as_json=True,
            )
        return render_entry(entry)

    def label(arguments: dict[str, Any]) -> str:
        return f"read_knowledge: #{arguments.get('entry_id', '?')}"

    registry.register(read_knowledge, display=ToolDisplay("📚", label))
