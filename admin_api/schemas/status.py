"""The status screen's snapshot: readiness plus database size, last backup, version, uptime."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from admin_api.openapi import REF_TEMPLATE
from admin_api.schemas.readiness import ComponentOut


class BackupOut(BaseModel):
    """The last backup the owner made: when, how, and the file (name only for a download)."""

    at: datetime
    how: Literal["api", "cli"] = Field(
        description="api: downloaded here; cli: python -m bot backup"
    )
    target: str


class ShardsOut(BaseModel):
    """The Discord shards this process serves, of how many (SHARD_IDS of SHARD_COUNT)."""

    count: int
    ids: list[int]


class StatusOut(BaseModel):
    """Everything the status screen shows, as of `sent_at`."""

    status: Literal["ok", "degraded", "down"]
    components: list[ComponentOut]
    db_bytes: int = Field(description="The database file's size in bytes.")
    last_backup: BackupOut | None = Field(
        description="The last backup made through the admin API or `python -m bot backup`."
    )
    version: str
    started_at: datetime = Field(description="When this process started.")
    uptime_seconds: int
    shards: ShardsOut | None = Field(description="None: one unsharded gateway connection.")
    sent_at: datetime


def status_event_schema() -> dict[str, Any]:
    """The JSON schema of one server-sent event's `data` on the status stream."""
    return {
        "description": "A full status snapshot (the same shape as GET /api/status).",
        "$ref": REF_TEMPLATE.format(model="StatusOut"),
    }
