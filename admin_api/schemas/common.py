"""Shapes every resource uses: field types, the error body, pages, counts, request bodies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from bot.store.spaces import ALL_SPACES, SpaceIdText, SpaceScope
from bot.store.transfer import SQLITE_INT_MAX, TEXT_ID_PATTERN

RowId = Annotated[int, Field(ge=1, le=SQLITE_INT_MAX)]
SessionId = Annotated[str, Field(pattern=TEXT_ID_PATTERN)]
Limit = Annotated[int, Field(ge=1, le=200)]
# A space id in its one spelling (`bot.store.spaces`): guild:<id>, dm:<id> or local:<name>.
SpaceId = SpaceIdText

Item = TypeVar("Item")
Cursor = TypeVar("Cursor")


class Body(BaseModel):
    """A request body: unknown fields are an error, so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # naive times are taken as UTC, like stored ones
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("time is out of range") from None


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]


def scope_of(space: str | None) -> SpaceScope:
    """The scope of a listing: one space, or every space when none is named (operator view)."""
    return ALL_SPACES if space is None else space


def stored_time(value: datetime | None) -> str | None:
    """A validated (UTC) datetime as the ISO-8601 text in the database (comparable as text)."""
    if value is None:
        return None
    return value.isoformat(timespec="microseconds")


class ErrorOut(BaseModel):
    """Every error: a short machine-readable code and a human-readable detail."""

    error: str
    detail: str
    field: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="The first input refused, when particular inputs are to blame.",
    )
    fields: dict[str, str] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="Each refused input and why.",
    )


class PageQuery(BaseModel):
    """Newest first; pass `next_cursor` back as `cursor`."""

    limit: Limit = 50
    cursor: RowId | None = None


class Page(BaseModel, Generic[Item, Cursor]):
    """A page of records; `next_cursor` fetches the next one (null on the last)."""

    items: list[Item]
    next_cursor: Cursor | None

    @classmethod
    def of(cls, items: list[Item], limit: int, cursor: Cursor | None) -> Page[Item, Cursor]:
        """A page of `items`; `cursor` (the last item's) is kept only when the page is full."""
        return cls(items=items, next_cursor=cursor if len(items) == limit else None)


class DeletedOut(BaseModel):
    """How many records a delete removed."""

    deleted: int


class OkOut(BaseModel):
    """An action succeeded."""

    ok: bool = True
