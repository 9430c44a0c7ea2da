"""Session export and import as JSON (admin API and the Discord /export command).

Format (version 1)::

    {"version": 1, "exported_at": "...",
     "session": {id, space_id, title, model, source, discord_channel_id, discord_guild_id,
                 parent_channel_id, topic, closed_at, created_at, updated_at},
     "messages": [{id, role, content, author_id, author_name, discord_message_id, reply_to,
                   archived_at, memory_id, created_at}, ...],      # archived ones included
     "memories": [{id, summary, level, condensed_into, created_at}, ...],
     "attachments": [{id, filename, content_type, size, source_url, created_at,
                      data_base64}, ...]}

Message and memory ids are the exporting database's; they only tie references together
(reply_to, memory_id, condensed_into) and are renumbered on import. Timestamps are kept.
Tags and note links are not exported (tags can be rebuilt with the tag backfill).

Exports are per space: the session's `space_id` says where it came from (older exports have
none), and an import always goes into the space the caller names.

An import never overwrites: an existing session id, attachment id or Discord message id is a
ConflictError. With `as_new` the session gets a fresh id and is detached from Discord (channel
and Discord message ids cleared), and attachments get fresh ids (`attachment:<id>` references
in message texts are rewritten), so a copy can sit next to its original.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import secrets
import sqlite3
import uuid
from datetime import datetime
from typing import Annotated, Any, Final, Literal

import aiosqlite
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from bot.errors import ConflictError, NotFoundError
from bot.store.attachments import AttachmentRepository
from bot.store.db import Database, utcnow
from bot.store.memories import MemoryRepository
from bot.store.messages import MessageRepository
from bot.store.sessions import SessionRepository
from bot.store.space_records import ensure_space_row

log = logging.getLogger(__name__)

EXPORT_VERSION: Final = 1
SQLITE_INT_MAX = 2**63 - 1
TEXT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


def _iso_timestamp(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError("must be an ISO-8601 timestamp") from exc
    return value


Timestamp = Annotated[str, AfterValidator(_iso_timestamp)]
RowId = Annotated[int, Field(ge=1, le=SQLITE_INT_MAX)]
BigId = Annotated[int, Field(ge=0, le=SQLITE_INT_MAX)]
TextId = Annotated[str, Field(pattern=TEXT_ID_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportedSession(_Strict):
    """The session row."""

    id: TextId
    space_id: Annotated[str, Field(max_length=100)] | None = None
    title: str = ""
    model: str | None = None
    source: str = "import"
    discord_channel_id: BigId | None = None
    discord_guild_id: BigId | None = None
    parent_channel_id: BigId | None = None
    topic: str | None = None
    closed_at: Timestamp | None = None
    created_at: Timestamp
    updated_at: Timestamp


class ExportedMessage(_Strict):
    """One message, archived or live."""

    id: RowId
    role: Literal["user", "assistant", "system"]
    content: str
    author_id: str | None = None
    author_name: str | None = None
    discord_message_id: BigId | None = None
    reply_to: RowId | None = None
    archived_at: Timestamp | None = None
    memory_id: RowId | None = None
    created_at: Timestamp


class ExportedMemory(_Strict):
    """One summary (level 0) or condensed summary (level ≥ 1)."""

    id: RowId
    summary: str
    level: Annotated[int, Field(ge=0, le=1000)] = 0
    condensed_into: RowId | None = None
    created_at: Timestamp


class ExportedAttachment(_Strict):
    """One attached file with its bytes (base64)."""

    id: TextId
    filename: str
    content_type: str = ""
    size: Annotated[int, Field(ge=0)]
    source_url: str | None = None
    created_at: Timestamp
    data_base64: str

    def data(self) -> bytes:
        """The decoded bytes."""
        return base64.b64decode(self.data_base64, validate=True)

    @model_validator(mode="after")
    def _check_data(self) -> ExportedAttachment:
        try:
            data = self.data()
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"attachment {self.id}: data_base64 is not valid base64") from exc
        if len(data) != self.size:
            raise ValueError(f"attachment {self.id}: size does not match its data")
        return self


def _unique(ids: list[int] | list[str], what: str) -> None:
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate {what} ids")


class SessionExport(_Strict):
    """A whole session as exported; validated on import (ids unique, references resolve)."""

    version: Literal[1] = EXPORT_VERSION
    exported_at: Timestamp
    session: ExportedSession
    messages: list[ExportedMessage] = Field(default_factory=list)
    memories: list[ExportedMemory] = Field(default_factory=list)
    attachments: list[ExportedAttachment] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_references(self) -> SessionExport:
        message_ids = [message.id for message in self.messages]
        memory_ids = [memory.id for memory in self.memories]
        _unique(message_ids, "message")
        _unique(memory_ids, "memory")
        _unique([attachment.id for attachment in self.attachments], "attachment")
        known_messages, known_memories = set(message_ids), set(memory_ids)
        for message in self.messages:
            if message.reply_to is not None and message.reply_to not in known_messages:
                raise ValueError(f"message {message.id} replies to an unknown message")
            if message.memory_id is not None and message.memory_id not in known_memories:
                raise ValueError(f"message {message.id} points at an unknown memory")
        for memory in self.memories:
            if memory.condensed_into is not None and memory.condensed_into not in known_memories:
                raise ValueError(f"memory {memory.id} is condensed into an unknown memory")
        return self


class SessionTransfer:
    """Exports a session to a SessionExport and imports one back, atomically."""

    def __init__(
        self,
        db: Database,
        sessions: SessionRepository,
        messages: MessageRepository,
        memories: MemoryRepository,
        attachments: AttachmentRepository,
    ) -> None:
        self._db = db
        self._sessions = sessions
        self._messages = messages
        self._memories = memories
        self._attachments = attachments

    async def export_session(self, space: str, session_id: str) -> SessionExport:
        """Everything stored for a session of `space`; NotFoundError when there is none."""
        session = await self._sessions.get(space, session_id)
        if session is None:
            raise NotFoundError(f"No session {session_id!r}.")
        messages = await self._messages.all_for_session(space, session_id)
        memories = await self._memories.all_for_session(space, session_id)
        attachments: list[ExportedAttachment] = []
        for meta in await self._attachments.list_for_session(space, session_id):
            found = await self._attachments.get(space, session_id, meta.id)
            if found is None:  # deleted while exporting
                continue
            _, data = found
            attachments.append(
                ExportedAttachment(
                    id=meta.id,
                    filename=meta.filename,
                    content_type=meta.content_type,
                    size=len(data),
                    source_url=meta.source_url,
                    created_at=meta.created_at,
                    data_base64=base64.b64encode(data).decode("ascii"),
                )
            )
        return SessionExport(
            exported_at=utcnow(),
            session=ExportedSession.model_validate(session, from_attributes=True),
            messages=[ExportedMessage.model_validate(m, from_attributes=True) for m in messages],
            memories=[ExportedMemory.model_validate(m, from_attributes=True) for m in memories],
            attachments=attachments,
        )

    async def import_session(self, space: str, data: SessionExport, *, as_new: bool = False) -> str:
        """Store an exported session in `space`; returns its id. Never overwrites anything."""
        try:
            return await self._import(space, data, as_new=as_new)
        except sqlite3.IntegrityError as exc:
            # The checks below run inside the same write transaction, so this is a backstop.
            raise ConflictError("The import clashes with data already stored.") from exc

    async def _import(self, space: str, data: SessionExport, *, as_new: bool) -> str:
        session_id = uuid.uuid4().hex if as_new else data.session.id
        attachment_ids = {
            a.id: (secrets.token_hex(8) if as_new else a.id) for a in data.attachments
        }
        async with self._db.transaction() as conn:
            if not as_new:
                await _refuse_existing(conn, data)
            await ensure_space_row(conn, space)
            await _insert_session(conn, space, session_id, data.session, as_new=as_new)
            memory_map = await _insert_memories(conn, space, session_id, data.memories)
            renamed = attachment_ids if as_new else {}
            await _insert_messages(
                conn,
                space,
                session_id,
                data.messages,
                memory_map=memory_map,
                renamed=renamed,
                as_new=as_new,
            )
            await _insert_attachments(conn, space, session_id, data.attachments, attachment_ids)
        log.info(
            "imported session %s into %s (%d messages, %d memories, %d attachments)",
            session_id,
            space,
            len(data.messages),
            len(data.memories),
            len(data.attachments),
        )
        return session_id


async def _insert_session(
    conn: aiosqlite.Connection,
    space: str,
    session_id: str,
    info: ExportedSession,
    *,
    as_new: bool,
) -> None:
    """The session row in `space`; a copy (`as_new`) is detached from its Discord channel."""
    await conn.execute(
        "INSERT INTO sessions (id, space_id, title, model, source, discord_channel_id, "
        "discord_guild_id, parent_channel_id, topic, closed_at, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id,
            space,
            info.title,
            info.model,
            info.source,
            None if as_new else info.discord_channel_id,
            None if as_new else info.discord_guild_id,
            None if as_new else info.parent_channel_id,
            info.topic,
            info.closed_at,
            info.created_at,
            info.updated_at,
        ),
    )


async def _insert_memories(
    conn: aiosqlite.Connection, space: str, session_id: str, memories: list[ExportedMemory]
) -> dict[int, int]:
    """Insert the summaries in id order, then link condensed ones; returns old id → new id."""
    memory_map: dict[int, int] = {}
    for memory in sorted(memories, key=lambda m: m.id):
        cursor = await conn.execute(
            "INSERT INTO memories (space_id, session_id, summary, level, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            (space, session_id, memory.summary, memory.level, memory.created_at),
        )
        memory_map[memory.id] = cursor.lastrowid or 0
    for memory in memories:
        if memory.condensed_into is not None:
            await conn.execute(
                "UPDATE memories SET condensed_into = ? WHERE space_id = ? AND id = ?",
                (memory_map[memory.condensed_into], space, memory_map[memory.id]),
            )
    return memory_map


def _rename_attachments(content: str, renamed: dict[str, str]) -> str:
    """`content` with every `attachment:<old>` reference pointing at the new id."""
    for old, new in renamed.items():
        content = content.replace(f"attachment:{old}", f"attachment:{new}")
    return content


async def _insert_messages(
    conn: aiosqlite.Connection,
    space: str,
    session_id: str,
    messages: list[ExportedMessage],
    *,
    memory_map: dict[int, int],
    renamed: dict[str, str],
    as_new: bool,
) -> None:
    """Insert the messages in id order with references renumbered, then link late replies."""
    message_map: dict[int, int] = {}
    for message in sorted(messages, key=lambda m: m.id):
        cursor = await conn.execute(
            "INSERT INTO messages (space_id, session_id, role, content, author_id, author_name, "
            "discord_message_id, reply_to, archived_at, memory_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                space,
                session_id,
                message.role,
                _rename_attachments(message.content, renamed),
                message.author_id,
                message.author_name,
                None if as_new else message.discord_message_id,
                None if message.reply_to is None else message_map.get(message.reply_to),
                message.archived_at,
                None if message.memory_id is None else memory_map[message.memory_id],
                message.created_at,
            ),
        )
        message_map[message.id] = cursor.lastrowid or 0
    for message in messages:
        # A reply stored before its question (odd, but valid) is linked afterwards.
        if message.reply_to is not None and message.reply_to > message.id:
            await conn.execute(
                "UPDATE messages SET reply_to = ? WHERE space_id = ? AND id = ?",
                (message_map[message.reply_to], space, message_map[message.id]),
            )


async def _insert_attachments(
    conn: aiosqlite.Connection,
    space: str,
    session_id: str,
    attachments: list[ExportedAttachment],
    attachment_ids: dict[str, str],
) -> None:
    """Insert the attached files under their (possibly fresh) ids."""
    for attachment in attachments:
        await conn.execute(
            "INSERT INTO attachments (id, space_id, session_id, filename, content_type, size, "
            "data, source_url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                attachment_ids[attachment.id],
                space,
                session_id,
                attachment.filename,
                attachment.content_type,
                attachment.size,
                attachment.data(),
                attachment.source_url,
                attachment.created_at,
            ),
        )


async def _any_exists(conn: aiosqlite.Connection, sql: str, values: list[Any]) -> bool:
    """Whether `sql` (taking the values as one JSON array) finds a row."""
    if not values:
        return False
    rows = await conn.execute_fetchall(sql, (json.dumps(values),))
    return bool(list(rows))


async def _refuse_existing(conn: aiosqlite.Connection, data: SessionExport) -> None:
    in_list = "IN (SELECT value FROM json_each(?))"
    if await _any_exists(conn, f"SELECT 1 FROM sessions WHERE id {in_list}", [data.session.id]):
        raise ConflictError(
            f"Session {data.session.id!r} already exists; import it as a new session instead."
        )
    attachment_ids = [a.id for a in data.attachments]
    if await _any_exists(conn, f"SELECT 1 FROM attachments WHERE id {in_list}", attachment_ids):
        raise ConflictError("An attachment of this export already exists; import it as new.")
    discord_ids = [m.discord_message_id for m in data.messages if m.discord_message_id is not None]
    if await _any_exists(
        conn, f"SELECT 1 FROM messages WHERE discord_message_id {in_list}", discord_ids
    ):
        raise ConflictError("Messages of this export are already stored; import it as new.")
