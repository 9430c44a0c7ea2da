"""The store's rows as the API shows them: every Discord id as a decimal string.

Discord ids pass 2^53, where JSON numbers stop being exact in JavaScript and in `jq`; Discord's
own API sends them as strings, and so does this one (requests still accept numbers).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from admin_api.schemas.common import DiscordId


class Row(BaseModel):
    """A response built from a store dataclass (`Row.model_validate(row)`)."""

    model_config = ConfigDict(from_attributes=True)


class SessionOut(Row):
    """A session: where it lives (space, Discord channel and server) and when it was active."""

    id: str
    space_id: str
    title: str
    model: str | None
    source: str
    discord_channel_id: DiscordId | None
    discord_guild_id: DiscordId | None
    parent_channel_id: DiscordId | None
    topic: str | None
    closed_at: str | None
    created_at: str
    updated_at: str


class StoredMessageOut(Row):
    """A stored message (archived ones carry `archived_at` and the summary that replaced them)."""

    id: int
    space_id: str
    session_id: str
    role: str
    content: str
    author_id: str | None
    author_name: str | None
    discord_message_id: DiscordId | None
    reply_to: int | None
    archived_at: str | None
    memory_id: int | None
    created_at: str


class TopicPostOut(Row):
    """A conversation opener the bot posted."""

    id: int
    space_id: str
    channel_id: DiscordId
    kind: str
    topic: str
    words: list[str]
    content: str
    discord_message_id: DiscordId | None
    posted_at: str
    answered_at: str | None = Field(
        default=None,
        description="When a person first wrote in the channel within the opener's reply window "
        "(null: not answered, or still waiting).",
    )


class DirectoryChannelOut(Row):
    """A channel the bot can see."""

    channel_id: DiscordId
    space_id: str
    name: str
    kind: str
    parent_id: DiscordId | None
    position: int
    updated_at: str


class DirectoryServerOut(Row):
    """A server the bot knows with its channels (`left_at`: the bot was removed)."""

    space_id: str
    guild_id: DiscordId
    name: str
    left_at: str | None
    channels: list[DirectoryChannelOut]


class PostResultOut(Row):
    """What a topic check or run did (`message_id`: the Discord message it posted)."""

    posted: bool
    reason: str
    text: str = ""
    topic: str = ""
    message_id: DiscordId | None = None
    due_at: datetime | None = Field(
        default=None,
        description="When the channel will have been quiet long enough (an idle check that "
        "waits only on that); null otherwise.",
    )
