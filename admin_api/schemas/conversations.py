"""Conversations: a space's channels, a channel's threads, a session's transcript.

Discord ids (channels, threads, messages) are decimal strings here: they exceed the integers
JavaScript's JSON.parse keeps exactly.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, model_validator

from admin_api.schemas.common import Limit, Page, RowId, SpaceId
from admin_api.schemas.rows import SessionOut
from bot.turn.approval import Verdict

ChannelParam = Annotated[str, Field(pattern=r"^[0-9]{1,20}$", examples=["123456789012345678"])]
Before = Annotated[str, Field(max_length=64)]


class ChannelsQuery(BaseModel):
    """A space's channels, most recently active first; pass `next_cursor` back as `before`."""

    space: SpaceId
    limit: Limit = 50
    before: Before | None = None


class ChannelOut(BaseModel):
    """A channel and its conversations.

    `channel_id` null groups the sessions outside Discord (terminal, admin chat, imports);
    ask for its threads with `channel=0`. `name` is the channel's name when the bot knows it
    (else null).
    """

    channel_id: str | None
    name: str | None = None
    threads: int
    open_threads: int
    last_activity: str


class ThreadsQuery(BaseModel):
    """Conversations of a space, most recently active first; pass `next_cursor` as `before`.

    `channel`: one channel's (a Discord thread lists under its parent channel; `0` lists the
    sessions outside Discord); without it, every conversation of the space.
    """

    space: SpaceId
    channel: ChannelParam | None = None
    limit: Limit = 50
    before: Before | None = None


class ThreadOut(BaseModel):
    """A conversation (session): where it is, when it was active, how many messages it has."""

    session_id: str
    title: str
    source: str
    model: str | None
    topic: str | None
    discord_channel_id: str | None
    parent_channel_id: str | None
    messages: int
    archived_messages: int
    created_at: str
    updated_at: str
    closed_at: str | None


class TranscriptQuery(BaseModel):
    """A page of a transcript in conversation order.

    From the start by default (pass `next_cursor` back as `cursor` for the next page);
    `latest` gives the newest `limit` messages, and `before` (an `earlier_cursor`) the `limit`
    messages just before that id, for "load earlier messages". `cursor` and `before` exclude
    each other.
    """

    limit: Annotated[int, Field(ge=1, le=500)] = 100
    cursor: RowId | None = None
    before: RowId | None = None
    latest: bool = False

    @model_validator(mode="after")
    def _one_direction(self) -> TranscriptQuery:
        if self.cursor is not None and (self.before is not None or self.latest):
            raise ValueError("pass either cursor (later messages) or before/latest, not both")
        return self


class SourceOut(BaseModel):
    """A web source a tool call returned."""

    title: str
    url: str


class ToolCallOut(BaseModel):
    """A tool call of the turn: its (bounded) arguments as JSON text, whether it worked, a
    short error when not, the sources it returned and how long it ran."""

    id: int
    call_id: str
    tool: str
    arguments: str
    ok: bool
    error: str | None
    sources: list[SourceOut]
    duration_ms: int | None
    created_at: str
    approval: Verdict | None = Field(
        default=None,
        description="Set when the tool asked its member first (Allow / Deny): their decision, "
        "no answer in time, or nobody could be asked.",
    )
    approved_by: str | None = Field(
        default=None, description="The Discord user id of who allowed or denied the call."
    )


class TranscriptMessageOut(BaseModel):
    """A message. `archived` ones were summarised (by summary `memory_id`) and left the
    context; an answer carries the tool calls of its turn (a question whose turn produced no
    answer carries them itself)."""

    id: int
    role: str
    content: str
    author_id: str | None
    author_name: str | None
    discord_message_id: str | None
    reply_to: int | None
    created_at: str
    archived: bool
    archived_at: str | None
    memory_id: int | None
    tool_calls: list[ToolCallOut]


class SummaryOut(BaseModel):
    """A summary (memory) and the messages it covers (ids first..last, `messages` of them).

    Level 0 summarises messages; level ≥ 1 condenses older summaries (`condensed_into` names
    the summary that replaced this one).
    """

    id: int
    level: int
    summary: str
    created_at: str
    condensed_into: int | None
    first_message_id: int | None
    last_message_id: int | None
    messages: int


class TranscriptOut(Page[TranscriptMessageOut, int]):
    """A page of a session's transcript in conversation order (every answer after its
    question), the session, and the summaries covering any message of the page."""

    session: SessionOut
    summaries: list[SummaryOut]
    earlier_cursor: int | None = Field(
        default=None,
        description="Pass as `before` for the messages before this page; null at the start.",
    )
