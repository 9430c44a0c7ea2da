"""LLM API log filters and the list row (a detail is `bot.store.repos.api_logs.ApiLog`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from admin_api.schemas.common import Limit, RowId, SpaceId, UtcDatetime


class LogFilterQuery(BaseModel):
    """Which API log rows to list or delete."""

    session_id: Annotated[str, Field(max_length=200)] | None = None
    space: SpaceId | None = None
    model: Annotated[str, Field(max_length=200)] | None = None
    errors_only: bool = False
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None


class LogListQuery(LogFilterQuery):
    """A page of API logs: newest first; pass `next_cursor` back as `cursor`."""

    limit: Limit = 50
    cursor: RowId | None = None


class LogDeleteQuery(LogFilterQuery):
    """Delete matching rows; with no filter at all, `all=true` is required."""

    all: bool = False


class LogSummaryOut(BaseModel):
    """One LLM call without its request and response bodies (a listing stays small)."""

    id: int
    session_id: str | None
    space_id: str | None
    model: str
    purpose: str
    error: str | None
    latency_ms: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    created_at: str
    # The token counts are (partly) PlayChat's estimate: the server sent none for them.
    tokens_estimated: bool = False
