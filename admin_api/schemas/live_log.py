"""The application log as a live stream (not the LLM API logs of `logs`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

LevelName = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
Backlog = Annotated[int, Field(ge=0, le=1000)]


class LiveLogQuery(BaseModel):
    """Which records: at or above `level`; `backlog` kept records first (0: only new ones);
    `text` in the message (any case); `logger`: comma-separated logger names, each with its
    children, to keep, or to leave out when it starts with "-" (`bot.llm,-bot.llm.pacing`)."""

    level: LevelName = "INFO"
    backlog: Backlog = 100
    text: Annotated[str, Field(max_length=200)] = ""
    logger: Annotated[str, Field(max_length=500)] = ""


class LogEntryOut(BaseModel):
    """One application log record (its message with secrets masked)."""

    type: Literal["entry"] = "entry"
    id: int
    time: str
    level: str
    logger: str
    message: str


class DroppedOut(BaseModel):
    """Records this reader missed because it read more slowly than the log was written."""

    type: Literal["dropped"] = "dropped"
    count: int


class RecentLogOut(BaseModel):
    """The newest kept records, oldest first."""

    entries: list[LogEntryOut]


LiveLogEvent = Annotated[LogEntryOut | DroppedOut, Field(discriminator="type")]


def live_log_event_schema() -> dict[str, Any]:
    """The JSON schema of one server-sent event's `data` in the live log."""
    schema: dict[str, Any] = TypeAdapter(LiveLogEvent).json_schema()
    return schema
