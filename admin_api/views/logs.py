"""LLM API logs: filtered, cursor-paged listing; detail; delete by id or by filter."""

from __future__ import annotations

from admin_api.deps import AdminDeps
from admin_api.errors import ApiError, not_found
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import (
    DeletedOut,
    IdPath,
    LogDeleteQuery,
    LogDetailOut,
    LogFilterQuery,
    LogListOut,
    LogListQuery,
    LogSummaryOut,
    stored_time,
)
from bot.store.api_logs import ApiLogFilter

TAG = "logs"


def _filter(query: LogFilterQuery) -> ApiLogFilter:
    return ApiLogFilter(
        session_id=query.session_id,
        model=query.model,
        errors_only=query.errors_only,
        since=stored_time(query.since),
        until=stored_time(query.until),
    )


async def list_logs(call: In[Empty, LogListQuery, Empty]) -> LogListOut:
    """Matching calls, newest first."""
    query = call.query
    rows = await call.ctx.services.repos.api_logs.list(
        _filter(query), limit=query.limit, before_id=query.cursor
    )
    items = [LogSummaryOut.model_validate(row, from_attributes=True) for row in rows]
    next_cursor = items[-1].id if len(items) == query.limit else None
    return LogListOut(items=items, next_cursor=next_cursor)


async def get_log(call: In[Empty, Empty, IdPath]) -> LogDetailOut:
    """One call with its redacted request and response."""
    row = await call.ctx.services.repos.api_logs.get(call.path.id)
    if row is None:
        raise not_found(f"Log {call.path.id}")
    return LogDetailOut.model_validate(row, from_attributes=True)


async def delete_log(call: In[Empty, Empty, IdPath]) -> DeletedOut:
    """Delete one log row."""
    if not await call.ctx.services.repos.api_logs.delete(call.path.id):
        raise not_found(f"Log {call.path.id}")
    return DeletedOut(deleted=1)


async def delete_logs(call: In[Empty, LogDeleteQuery, Empty]) -> DeletedOut:
    """Delete every matching row; deleting everything needs `all=true`."""
    log_filter = _filter(call.query)
    if log_filter == ApiLogFilter() and not call.query.all:
        raise ApiError(
            422, "validation_error", "No filter given: pass all=true to delete every log."
        )
    return DeletedOut(deleted=await call.ctx.services.repos.api_logs.delete_matching(log_filter))


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Log routes."""
    return [
        Route(
            method="GET",
            path="/api/logs",
            handler=list_logs,
            summary="List LLM API logs",
            tag=TAG,
            body=Empty,
            query=LogListQuery,
            params=Empty,
            response=LogListOut,
        ),
        Route(
            method="DELETE",
            path="/api/logs",
            handler=delete_logs,
            summary="Delete logs matching a filter",
            tag=TAG,
            body=Empty,
            query=LogDeleteQuery,
            params=Empty,
            response=DeletedOut,
        ),
        Route(
            method="GET",
            path="/api/logs/{id}",
            handler=get_log,
            summary="One log with request and response",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=LogDetailOut,
        ),
        Route(
            method="DELETE",
            path="/api/logs/{id}",
            handler=delete_log,
            summary="Delete one log",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=DeletedOut,
        ),
    ]
