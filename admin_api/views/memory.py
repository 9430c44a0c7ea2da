"""Long-term memory: summaries (list, delete) and saved web knowledge (list, get, delete,
regenerate, move to another space). Listings take `?space=` (every space without it)."""

from __future__ import annotations

from admin_api.errors import ApiError, not_found
from admin_api.routing import Route
from admin_api.schemas.common import (
    DeletedOut,
    Page,
    PageQuery,
    RowId,
    SessionId,
    SpaceId,
    scope_of,
)
from admin_api.schemas.spaces import MoveIn
from bot.errors import NotFoundError
from bot.memory.knowledge import RegenerateError
from bot.services import Services
from bot.store.repos.knowledge import KnowledgeEntry
from bot.store.repos.memories import Memory
from bot.store.spaces import ALL_SPACES


async def list_summaries(
    services: Services,
    query: PageQuery,
    session_id: SessionId | None = None,
    space: SpaceId | None = None,
) -> Page[Memory, int]:
    """List memory summaries.

    A session's summaries (all, oldest first) or everyone's (newest first, paged).
    """
    memories = services.repos.memories
    if session_id is not None:
        session = await services.repos.sessions.get(scope_of(space), session_id)
        items = (
            [] if session is None else await memories.all_for_session(session.space_id, session_id)
        )
        return Page(items=items, next_cursor=None)
    rows = await memories.list(scope_of(space), limit=query.limit, before_id=query.cursor)
    return Page.of(rows, query.limit, rows[-1].id if rows else None)


async def delete_summary(services: Services, id: RowId) -> DeletedOut:
    """Delete a memory summary (the messages it replaced stay archived)."""
    if not await services.repos.memories.delete(ALL_SPACES, id):
        raise not_found(f"Summary {id}")
    return DeletedOut(deleted=1)


async def list_knowledge(
    services: Services, query: PageQuery, space: SpaceId | None = None
) -> Page[KnowledgeEntry, int]:
    """List saved knowledge, newest first."""
    entries = await services.knowledge.list(
        scope_of(space), limit=query.limit, before_id=query.cursor
    )
    return Page.of(entries, query.limit, entries[-1].id if entries else None)


async def get_knowledge(services: Services, id: RowId) -> KnowledgeEntry:
    """One knowledge entry with its sources."""
    entry = await services.knowledge.get(ALL_SPACES, id)
    if entry is None:
        raise not_found(f"Knowledge entry {id}")
    return entry


async def delete_knowledge(services: Services, id: RowId) -> DeletedOut:
    """Delete a knowledge entry."""
    if not await services.knowledge.delete(ALL_SPACES, id):
        raise not_found(f"Knowledge entry {id}")
    return DeletedOut(deleted=1)


async def regenerate_knowledge(services: Services, id: RowId) -> KnowledgeEntry:
    """Regenerate a knowledge entry.

    Its sources are fetched again and summarised anew; the entry keeps its id and sources,
    its title, body and Markdown file are replaced. 502 when no source can be read again (or
    the model fails); the entry is unchanged then.
    """
    entry = await services.knowledge.get(ALL_SPACES, id)
    if entry is None:
        raise not_found(f"Knowledge entry {id}")
    try:
        return await services.knowledge.regenerate(entry.space_id, id)
    except NotFoundError:
        raise not_found(f"Knowledge entry {id}") from None
    except RegenerateError as exc:
        raise ApiError(502, "sources_unreadable", str(exc)) from None


async def move_knowledge(services: Services, id: RowId, body: MoveIn) -> KnowledgeEntry:
    """Move a knowledge entry (and its Markdown file) to another space.

    The file goes to the new space's web_search folder; its session link is dropped.
    """
    entry = await get_knowledge(services, id)
    return await services.spaces.move_knowledge(entry.space_id, id, body.space_id)


def routes() -> list[Route]:
    """Memory routes."""
    return [
        Route("GET", "/api/memory/summaries", list_summaries),
        Route("DELETE", "/api/memory/summaries/{id}", delete_summary),
        Route("GET", "/api/memory/knowledge", list_knowledge),
        Route("GET", "/api/memory/knowledge/{id}", get_knowledge),
        Route("DELETE", "/api/memory/knowledge/{id}", delete_knowledge),
        Route("POST", "/api/memory/knowledge/{id}/regenerate", regenerate_knowledge),
        Route("POST", "/api/memory/knowledge/{id}/move", move_knowledge),
    ]
