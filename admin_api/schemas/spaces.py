"""Spaces: the operator's list with counts, purge results and move requests."""

from __future__ import annotations

from pydantic import BaseModel

from admin_api.schemas.common import Body, DiscordId, SpaceId, TimeZone
from admin_api.schemas.models import ModelName


class SpaceOut(BaseModel):
    """A space: its kind, display name (a server's name), what it holds and when the bot left."""

    id: str
    kind: str
    name: str
    discord_id: DiscordId | None
    sessions: int
    notes: int
    knowledge: int
    left_at: str | None
    default_model: str | None
    timezone: str | None


class SpaceListOut(BaseModel):
    """Every space, local ones first."""

    spaces: list[SpaceOut]


class PurgeOut(BaseModel):
    """What purging a space removed: rows per table and knowledge files."""

    space_id: str
    rows: dict[str, int]
    total_rows: int
    files: int


class MoveIn(Body):
    """The space a record moves to."""

    space_id: SpaceId


class SpaceUpdateIn(Body):
    """Changes to a space, each optional: `default_model` is the model string of a connection
    (preset) its conversations use unless a person picks another (null: the global model);
    `timezone` an IANA name its days and shown times follow (null: UTC)."""

    default_model: ModelName | None = None
    timezone: TimeZone | None = None
