"""A turn's events (session, tool, notes, sources, remembered, chunk, done, error): what front
ends show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ToolStatus = Literal["running", "done", "error"]
# Why a fact was not saved: the member's memory is off here, they keep the most facts already,
# the fact is empty or too long, or saving failed (the store, or reading the member's switch).
NotSavedReason = Literal["memory_off", "full", "invalid", "failed"]
# The icon of a tool that declares none (and of calls to tools that do not exist).
DEFAULT_TOOL_ICON = "🔧"


@dataclass(frozen=True)
class SessionEvent:
    """The session the turn belongs to (sent first)."""

    session_id: str
    created: bool = False


@dataclass(frozen=True)
class ToolEvent:
    """A tool starts (status running) or finishes (done/error) — the same id for both."""

    id: str
    name: str
    status: ToolStatus
    label: str = ""
    detail: str = ""
    result: str | None = None
    icon: str = DEFAULT_TOOL_ICON


@dataclass(frozen=True)
class NotesUpdatedEvent:
    """The AI changed a shared note."""


@dataclass(frozen=True)
class SourcesEvent:
    """Web sources used in this turn: [{title, url}]."""

    sources: list[dict[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class RememberedEvent:
    """A fact about the speaking member: saved as fact `fact_id`, or not saved and why.

    Sent for a request to remember (saved or not) and for each `remember` call that saved.
    """

    fact_id: int | None
    fact: str
    saved: bool
    reason: NotSavedReason | None = None


@dataclass(frozen=True)
class ChunkEvent:
    """A piece of the answer text."""

    text: str


@dataclass(frozen=True)
class DoneEvent:
    """The turn finished; the full answer is stored as message `message_id`."""

    text: str
    message_id: int


@dataclass(frozen=True)
class ErrorEvent:
    """The turn failed; `message` is safe to show to the user.

    `model_down`: the model could not be reached; Discord shows members its own short notice.
    `detail`: the operator's sentence (address, what failed, the fix), for operator contexts
    only (the terminal chat, the admin page); None when `message` says it all.
    `not_stored`: the user's message could not be stored, so the turn never started (the
    message says so and why; nothing was sent to the model).
    """

    message: str
    model_down: bool = False
    detail: str | None = None
    not_stored: bool = False


def operator_message(event: ErrorEvent) -> str:
    """A failed turn as the operator reads it (terminal chat, admin page): the address, what
    failed and the fix when known, else the member's sentence. Members on Discord never see it."""
    return event.detail or event.message


Event = (
    SessionEvent
    | ToolEvent
    | NotesUpdatedEvent
    | SourcesEvent
    | RememberedEvent
    | ChunkEvent
    | DoneEvent
    | ErrorEvent
)


def to_wire(event: Event) -> dict[str, Any]:
    """An event as JSON `{"type", "value"}`, the shape the SSE stream sends."""
    match event:
        case SessionEvent(session_id=session_id):
            return {"type": "session_id", "value": session_id}
        case ToolEvent():
            value: dict[str, Any] = {
                "id": event.id,
                "name": event.name,
                "status": event.status,
                "icon": event.icon,
            }
            if event.status == "running":
                value.update(label=event.label, detail=event.detail)
            else:
                value["result"] = event.result
            return {"type": "tool", "value": value}
        case NotesUpdatedEvent():
            return {"type": "notes_updated"}
        case SourcesEvent(sources=sources):
            return {"type": "sources", "value": sources}
        case RememberedEvent():
            value = {
                "fact_id": event.fact_id,
                "fact": event.fact,
                "saved": event.saved,
                "reason": event.reason,
            }
            return {"type": "remembered", "value": value}
        case ChunkEvent(text=text):
            return {"type": "chunk", "value": text}
        case DoneEvent(message_id=message_id):
            return {"type": "done", "message_id": message_id}
        case ErrorEvent(message=message, detail=detail):
            return {"type": "error", "value": message, "detail": detail}
    raise TypeError(f"unknown event {event!r}")  # pragma: no cover
