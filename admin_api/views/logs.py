"""LLM API logs: filtered, cursor-paged listing; detail; delete by id or by filter."""

from __future__ import annotations

from dataclasses import asdict

from admin_api.errors import ApiError, not_found
from admin_api.routing import Route
from admin_api.schemas.common import DeletedOut, Page, RowId, stored_time
from admin_api.schemas.logs import LogDeleteQuery, LogFilterQuery, LogListQuery, LogSummaryOut
from bot.services import Services
from bot.store.repos.api_logs import ApiLog, ApiLogFilter


def _filter(query: LogFilterQuery) -> ApiLogFilter:
    return ApiLogFilter(
        session_id=query.session_id,
        space_id=query.space,
        model=query.model,
        errors_only=query.errors_only,
        since=stored_time(query.since),
        until=stored_time(query.until),
    )


async def list_logs(services: Services, query: LogListQuery) -> Page[LogSummaryOut, int]:
    """List LLM API logs matching a filter, newest first."""
    rows = await services.repos.api_logs.list(
        _filter(query), limit=query.limit, before_id=query.cursor
    )
    speakers = await services.repos.api_logs.speakers([row.id for row in rows])
    items = [
        LogSummaryOut.model_validate(row, from_attributes=True).model_copy(
            update=asdict(speakers[row.id]) if row.id in speakers else {}
        )
        for row in rows
    ]
    return Page.of(items, query.limit, items[-1].id if items else None)


async def get_log(services: Services, id: RowId) -> ApiLog:
    """One log with its (redacted) request and response."""
    row = await services.repos.api_logs.get(id)
    if row is None:
        raise not_found(f"Log {id}")
    return row


async def delete_log(services: Services, id: RowId) -> DeletedOut:
    """Delete one log."""
    if not await services.repos.api_logs.delete(id):
        raise not_found(f"Log {id}")
    return DeletedOut(deleted=1)


async def delete_logs(services: Services, query: LogDeleteQuery) -> DeletedOut:
    """Delete logs matching a filter (deleting every log needs `all=true`)."""
    log_filter = _filter(query)
    if log_filter == ApiLogFilter() and not query.all:
        raise ApiError(
            422, "validation_error", "No filter given: pass all=true to delete every log."
        )
    return DeletedOut(deleted=await services.repos.api_logs.delete_matching(log_filter))


def routes() -> list[Route]:
    """Log routes."""
    return [
        Route("GET", "/api/logs", list_logs),
        Route("DELETE", "/api/logs", delete_logs),
        Route("GET", "/api/logs/{id}", get_log),
        Route("DELETE", "/api/logs/{id}", delete_log),
    ]
