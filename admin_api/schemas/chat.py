"""The chat turn's input, and the JSON schema of its events derived from `bot.turn.events`.

The event schema is not declared here: each event dataclass is run through `to_wire` with
traceable field values, and wherever a value shows up in the wire dict its field's schema goes
(constants stay constants). A change to an event or to `to_wire` changes the schema with it.
"""

from __future__ import annotations

import dataclasses
import itertools
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from admin_api.schemas.common import Body, RowId, SessionId, SpaceId
from admin_api.schemas.models import ModelName
from bot.turn.events import Event, to_wire


class ChatIn(Body):
    """A message to answer; the answer streams back as server-sent events."""

    message: Annotated[str, Field(min_length=1, max_length=32_000)]
    session_id: SessionId | None = None
    model: ModelName | None = None
    note_page_ids: Annotated[list[RowId], Field(max_length=100)] | None = None
    space_id: SpaceId | None = None  # a new conversation's space (default: the local space)


class _Traced(str):
    """A field value that remembers its field, so it can be found again in `to_wire`'s output."""

    field: str
    literal: bool

    def __new__(cls, value: str, field: str, *, literal: bool = False) -> _Traced:
        traced = super().__new__(cls, value)
        traced.field = field
        traced.literal = literal
        return traced


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """`schema` with every local $ref replaced by its definition (events are not recursive)."""
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return _inline(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    return {key: _inline(value, defs) for key, value in schema.items()}


def _field_schemas(event_type: type[Any]) -> dict[str, Any]:
    schema = TypeAdapter(event_type).json_schema(mode="serialization")
    defs = schema.get("$defs", {})
    return {
        name: _inline({k: v for k, v in prop.items() if k not in ("title", "default")}, defs)
        for name, prop in schema.get("properties", {}).items()
    }


def _schema_of(value: Any, fields: dict[str, Any]) -> dict[str, Any]:
    if isinstance(value, _Traced):
        return {"const": str(value)} if value.literal else fields[value.field]
    if isinstance(value, str):
        return {"const": value}
    if isinstance(value, dict):
        return {
            "type": "object",
            "properties": {key: _schema_of(item, fields) for key, item in value.items()},
            "required": list(value),
            "additionalProperties": False,
        }
    raise TypeError(f"to_wire produced {value!r}, which no event field explains")


def _wire_variants(event_type: type[Any]) -> Iterator[dict[str, Any]]:
    """One schema per combination of the event's Literal fields (to_wire may branch on them)."""
    hints = typing.get_type_hints(event_type)
    names = [f.name for f in dataclasses.fields(event_type)]
    literals = {
        n: typing.get_args(hints[n]) for n in names if typing.get_origin(hints[n]) is Literal
    }
    fields = _field_schemas(event_type)
    for combination in itertools.product(*literals.values()):
        values: dict[str, Any] = {name: _Traced("", name) for name in names}
        for name, literal in zip(literals, combination, strict=True):
            values[name] = _Traced(literal, name, literal=True)
        schema = _schema_of(to_wire(event_type(**values)), fields)
        yield {"title": event_type.__name__, "description": event_type.__doc__ or "", **schema}


def chat_event_schema() -> dict[str, Any]:
    """The JSON schema of one server-sent event's `data` in a chat turn."""
    variants: list[dict[str, Any]] = []
    for event_type in typing.get_args(Event):
        variants += [v for v in _wire_variants(event_type) if v not in variants]
    return {
        "description": "The JSON `data` of one server-sent event of a chat turn.",
        "oneOf": variants,
    }
