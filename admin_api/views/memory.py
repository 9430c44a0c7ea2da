"""Long-term memory: summaries (list, delete) and saved web knowledge (list, get, delete)."""

from __future__ import annotations

from admin_api.context import AdminContext
from admin_api.deps import AdminDeps
from admin_api.errors import ApiError, not_found
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import (
    DeletedOut,
    IdPath,
    KnowledgeListOut,
    KnowledgeOut,
    PageQuery,
    SourceOut,
    SummaryListOut,
    SummaryOut,
    SummaryQuery,
)
from bot.memory.knowledge import KnowledgeService
from bot.store.knowledge import KnowledgeEntry

TAG = "memory"


async def list_summaries(call: In[Empty, SummaryQuery, Empty]) -> SummaryListOut:
    """A session's summaries (all, oldest first) or everyone's (newest first, paged)."""
    query, memories = call.query, call.ctx.services.repos.memories
    if query.session_id is not None:
        rows = await memories.all_for_session(query.session_id)
        items = [SummaryOut.model_validate(row, from_attributes=True) for row in rows]
        return SummaryListOut(items=items, next_cursor=None)
    rows = await memories.list(limit=query.limit, before_id=query.cursor)
    items = [SummaryOut.model_validate(row, from_attributes=True) for row in rows]
    next_cursor = items[-1].id if len(items) == query.limit else None
    return SummaryListOut(items=items, next_cursor=next_cursor)


async def delete_summary(call: In[Empty, Empty, IdPath]) -> DeletedOut:
    """Forget one summary (the messages it replaced stay archived)."""
    if not await call.ctx.services.repos.memories.delete(call.path.id):
        raise not_found(f"Summary {call.path.id}")
    return DeletedOut(deleted=1)


def knowledge_of(ctx: AdminContext) -> KnowledgeService:
    """The knowledge service (its routes are registered only when there is one)."""
    if ctx.deps.knowledge is None:  # pragma: no cover - routes absent without the service
        raise ApiError(503, "unavailable", "Saved knowledge is not available.")
    return ctx.deps.knowledge


def _entry(entry: KnowledgeEntry) -> KnowledgeOut:
    return KnowledgeOut(
        id=entry.id,
        query=entry.query,
        title=entry.title,
        summary=entry.summary,
        session_id=entry.session_id,
        md_path=entry.md_path,
        created_at=entry.created_at,
        sources=[SourceOut(title=source.title, url=source.url) for source in entry.sources],
    )


async def list_knowledge(call: In[Empty, PageQuery, Empty]) -> KnowledgeListOut:
    """Saved knowledge, newest first."""
    query = call.query
    entries = await knowledge_of(call.ctx).list(limit=query.limit, before_id=query.cursor)
    items = [_entry(entry) for entry in entries]
    next_cursor = items[-1].id if len(items) == query.limit else None
    return KnowledgeListOut(items=items, next_cursor=next_cursor)


async def get_knowledge(call: In[Empty, Empty, IdPath]) -> KnowledgeOut:
    """One knowledge entry with its sources."""
    entry = await knowledge_of(call.ctx).get(call.path.id)
    if entry is None:
        raise not_found(f"Knowledge entry {call.path.id}")
    return _entry(entry)


async def delete_knowledge(call: In[Empty, Empty, IdPath]) -> DeletedOut:
    """Forget a knowledge entry."""
    knowledge = knowledge_of(call.ctx)
    if await knowledge.get(call.path.id) is None:
        raise not_found(f"Knowledge entry {call.path.id}")
    await knowledge.delete(call.path.id)
    return DeletedOut(deleted=1)


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Memory routes (knowledge ones only with a knowledge service)."""
    table: list[AnyRoute] = [
        Route(
            method="GET",
            path="/api/memory/summaries",
            handler=list_summaries,
            summary="List memory summaries",
            tag=TAG,
            body=Empty,
            query=SummaryQuery,
            params=Empty,
            response=SummaryListOut,
        ),
        Route(
            method="DELETE",
            path="/api/memory/summaries/{id}",
            handler=delete_summary,
            summary="Delete a memory summary",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=DeletedOut,
        ),
    ]
    if deps.knowledge is None:
        return table
    return [
        *table,
        Route(
            method="GET",
            path="/api/memory/knowledge",
            handler=list_knowledge,
            summary="List saved knowledge",
            tag=TAG,
            body=Empty,
            query=PageQuery,
            params=Empty,
            response=KnowledgeListOut,
        ),
        Route(
            method="GET",
            path="/api/memory/knowledge/{id}",
            handler=get_knowledge,
            summary="One knowledge entry",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=KnowledgeOut,
        ),
        Route(
            method="DELETE",
            path="/api/memory/knowledge/{id}",
            handler=delete_knowledge,
            summary="Delete a knowledge entry",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=DeletedOut,
        ),
    ]
