"""The `recall` tool: search the past conversations of the conversation's space.

The space is injected by the engine (never taken from the model: the registry drops a
`space_id` argument). Results are paged as seed 000 pages its tools: whole hits per page, the
whole result (header, hits, page-info footer) within the result limit (6,000 characters by
default), an opaque continuation token bound to the tool and the query, checked strictly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from bot.config import Settings
from bot.errors import ToolError
from bot.memory.recall import RecallLabels, RecallService, normalize_query, render_hit
from bot.prompts import prompts_for
from bot.tools.core import ToolDisplay, ToolRegistry, short_text
from bot.tools.paging import (
    MAX_RECALL_QUERY_CHARS,
    InvalidTokenError,
    PageLimitError,
    format_paged_result,
    make_token,
    page_footer,
    parse_token,
)
from bot.tools.room import ResultRoom, longest_fit, room_for

TOOL: Final = "recall"
# Hits read (with their neighbours) for one page; fewer are shown when they do not all fit.
PAGE_HITS: Final = 8
BLOCK_SEPARATOR: Final = "\n\n"
RECALL_ICON: Final = "🧠"
PAGE_LIMIT: Final = "The tool result limit is too small to show a recall result."

NextToken = Callable[[int], str | None]


def assemble_page(
    prefix: str, blocks: list[str], next_token_for: NextToken, limit: int | ResultRoom
) -> tuple[str, int]:
    """As many whole blocks as fit with `prefix` and the footer in `limit` (characters, or a
    room of characters and tokens), and how many; when not even the first fits whole, the
    first cut to the room left.

    `next_token_for(n)` is the token that resumes after the first n blocks (None: no more).
    """
    room = limit if isinstance(limit, ResultRoom) else ResultRoom(limit)
    for count in range(len(blocks), 0, -1):
        text = format_paged_result(
            prefix + BLOCK_SEPARATOR.join(blocks[:count]), next_token_for(count)
        )
        if room.fits(text):
            return text, count
    footer = page_footer(next_token_for(1))
    if not blocks:
        raise PageLimitError("no room left for a result")
    first = blocks[0]
    keep = longest_fit(room, len(first), lambda n: prefix + first[:n] + "…" + footer)
    if not keep:
        raise PageLimitError("no room left for a result")
    return prefix + first[:keep] + "…" + footer, 1


def _label(arguments: dict[str, Any]) -> str:
    return f"recall: {short_text(arguments.get('query', ''))}"


class RecallTool:
    """The handler, bound to the space's recall service and the settings in effect."""

    def __init__(self, recall: RecallService, settings: Callable[[], Settings]) -> None:
        self._recall = recall
        self._settings = settings

    async def recall(
        self,
        query: str,
        continue_from: str | None = None,
        space_id: str | None = None,
        result_room: ResultRoom | None = None,
    ) -> str:
        """Search this community's past conversations (all its threads and DMs) for what
        was said: who, when, where, with the lines around it.

        Args:
            query: Words to look for (names, places, things said).
            continue_from: next_token of the previous recall result for the same query.
        """
        settings = self._settings()
        prompts = prompts_for(settings.language)
        if not space_id:
            raise ToolError(prompts["recall_unavailable"])
        query = normalize_query(query, MAX_RECALL_QUERY_CHARS)
        offset = self._offset(continue_from, query, settings) if continue_from else 0
        page = await self._recall.search(space_id, query, offset=offset, count=PAGE_HITS)
        if not page.terms.all:
            return prompts["recall_no_terms"]
        if page.total == 0:
            return prompts.format("recall_none", query=query)
        if not page.hits:
            raise ToolError(prompts["recall_past_end"])
        labels = RecallLabels.of(prompts)
        blocks = [
            render_hit(hit, labels, offset + i + 1, page.zone) for i, hit in enumerate(page.hits)
        ]
        header = prompts.format("recall_header", query=query, total=page.total, first=offset + 1)
        if page.capped:
            header += " " + prompts.format("recall_capped", total=page.total)

        def next_token_for(count: int) -> str | None:
            after = offset + count
            return make_token(TOOL, query=query, offset=after) if after < page.total else None

        try:
            text, _ = assemble_page(
                header + BLOCK_SEPARATOR,
                blocks,
                next_token_for,
                room_for(result_room, settings.max_tool_result_chars),
            )
        except PageLimitError:
            raise ToolError(PAGE_LIMIT) from None
        return text

    @staticmethod
    def _offset(token: str, query: str, settings: Settings) -> int:
        """The offset a token resumes at; ToolError for a bad token or another query's."""
        try:
            payload = parse_token(token, TOOL, max_age=settings.pagination_token_ttl)
            if payload["query"] != query:
                raise InvalidTokenError("it was issued for another query; pass the same query")
        except InvalidTokenError as exc:
            raise ToolError(str(exc)) from None
        offset: int = payload["offset"]
        return offset


def register_recall_tool(
    registry: ToolRegistry, recall: RecallService, settings: Callable[[], Settings]
) -> None:
    """Offer recall (only when a database is present)."""
    registry.register(
        RecallTool(recall, settings).recall,
        paged=True,
        display=ToolDisplay(RECALL_ICON, _label),
    )
