"""Shapes every resource uses: field types, the error body, pages, counts, request bodies."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer, WithJsonSchema

from bot.store.spaces import ALL_SPACES, SpaceIdText, SpaceScope
from bot.store.transfer import SQLITE_INT_MAX, TEXT_ID_PATTERN
from bot.utils.zones import zone

RowId = Annotated[int, Field(ge=1, le=SQLITE_INT_MAX)]
SessionId = Annotated[str, Field(pattern=TEXT_ID_PATTERN)]
Limit = Annotated[int, Field(ge=1, le=200)]
# A space id in its one spelling (`bot.store.spaces`): guild:<id>, dm:<id> or local:<name>.
SpaceId = SpaceIdText
_DIGITS = {"type": "string", "pattern": "^[0-9]{1,20}$", "examples": ["1300000000000000848"]}
# A Discord id (snowflake): answered as a decimal string (JSON numbers past 2^53 lose digits in
# JavaScript and jq, and Discord's own API uses strings); a request may send a string or a number.
DiscordId = Annotated[
    int,
    Field(ge=0, le=SQLITE_INT_MAX),
    PlainSerializer(str, return_type=str, when_used="json"),
    WithJsonSchema(_DIGITS, mode="serialization"),
    WithJsonSchema({"anyOf": [_DIGITS, {"type": "integer", "minimum": 0}]}, mode="validation"),
]

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


def _time_zone(value: str) -> str:
    zone(value)  # ValueError: "unknown time zone '…'"
    return value


TimeZone = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_time_zone)]
