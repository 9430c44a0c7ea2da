"""Full-text search over messages, notes and knowledge, Japanese included."""

from __future__ import annotations

from admin_api.routing import Route
from admin_api.schemas.common import scope_of
from admin_api.schemas.search import MAX_CURSOR, SearchOut, SearchQuery
from bot.services import Services
from bot.store.reads.search import KINDS


async def search(services: Services, query: SearchQuery) -> SearchOut:
    """Search messages, note pages and knowledge entries (one space's with `space`).

    Terms of 3+ characters use the full-text index (trigram: substring match, any script);
    a query of only 1–2 character terms scans each space's recent rows instead (`mode`).
    Every hit carries its `space_id`.
    """
    offset = query.cursor or 0
    result = await services.repos.search.search(
        scope_of(query.space),
        query.q,
        KINDS if query.kind is None else (query.kind,),
        limit=query.limit,
        offset=offset,
    )
    full = len(result.hits) == query.limit and offset + query.limit <= MAX_CURSOR
    return SearchOut(
        items=result.hits,
        next_cursor=offset + query.limit if full else None,
        mode=result.mode,
    )


def routes() -> list[Route]:
    """Search routes."""
    return [Route("GET", "/api/search", search)]
