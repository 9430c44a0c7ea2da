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

An import is one write transaction, so an interrupted one leaves nothing behind. The work that
grows with the export (renaming references in one regex pass per message, decoding files) runs
in a worker thread before it; inside it only bulk inserts run, with message and memory row ids
assigned up front, so 6,000 messages × 6,000 attachments hold other writers for ~0.1 s.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from bot.errors import ConflictError, NotFoundError
from bot.store.engine.connection import Connection, IntegrityError, utcnow
from bot.store.engine.database import Database
from bot.store.repos.attachments import AttachmentRepository
from bot.store.repos.memories import MemoryRepository
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from bot.store.repos.space_records import ensure_space_row
from bot.store.spaces import SpaceIdText

log = logging.getLogger(__name__)

EXPORT_VERSION: Final = 1
SQLITE_INT_MAX = 2**63 - 1
TEXT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
ATTACHMENT_PREFIX: Final = "attachment:"
ATTACHMENT_REF: Final = re.compile(r"attachment:([A-Za-z0-9_-]+)")


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
    space_id: SpaceIdText | None = None
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
        except IntegrityError as exc:
            # The checks below run inside the same write transaction, so this is a backstop.
            raise ConflictError("The import clashes with data already stored.") from exc

    async def _import(self, space: str, data: SessionExport, *, as_new: bool) -> str:
        # Everything that grows with the export (renaming references, decoding files) is done
        # in a worker before the write lock is taken; inside it only bulk inserts run, so other
        # writers wait milliseconds, and the session appears whole or not at all.
        plan = await asyncio.to_thread(_ImportPlan.of, space, data, as_new)
        async with self._db.transaction() as conn:
            if not as_new:
                await _refuse_existing(conn, data)
            await ensure_space_row(conn, space)
            await plan.insert(conn)
        log.info(
            "imported session %s into %s (%d messages, %d memories, %d attachments)",
            plan.session_id,
            space,
            len(data.messages),
            len(data.memories),
            len(data.attachments),
        )
        return plan.session_id


def rename_attachments(content: str, renamed: dict[str, str]) -> str:
    """`content` with every `attachment:<old id>` reference pointing at its new id, in one pass
    (ids are matched whole, so one id that is a prefix of another is not touched)."""
    if not renamed or ATTACHMENT_PREFIX not in content:
        return content

    def new_id(match: re.Match[str]) -> str:
        old = match.group(1)
        return ATTACHMENT_PREFIX + renamed.get(old, old)

    return ATTACHMENT_REF.sub(new_id, content)


@dataclass(frozen=True)
class _ImportPlan:
    """The rows of one import, worked out before the write transaction; ids that depend on the
    database (message and memory row ids) are assigned inside it."""

    space: str
    session_id: str
    session: tuple[Any, ...]
    memories: list[ExportedMemory]
    messages: list[tuple[ExportedMessage, str]]
    attachments: list[tuple[Any, ...]]
    as_new: bool

    @classmethod
    def of(cls, space: str, data: SessionExport, as_new: bool) -> _ImportPlan:
        """Fresh ids (`as_new`), renamed references, decoded files; linear in the export."""
        session_id = uuid.uuid4().hex if as_new else data.session.id
        ids = {a.id: (secrets.token_hex(8) if as_new else a.id) for a in data.attachments}
        renamed = ids if as_new else {}
        info = data.session
        return cls(
            space=space,
            session_id=session_id,
            session=(
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
            memories=sorted(data.memories, key=lambda m: m.id),
            messages=[
                (message, rename_attachments(message.content, renamed))
                for message in sorted(data.messages, key=lambda m: m.id)
            ],
            attachments=[
                (
                    ids[a.id],
                    space,
                    session_id,
                    a.filename,
                    a.content_type,
                    a.size,
                    a.data(),
                    a.source_url,
                    a.created_at,
                )
                for a in data.attachments
            ],
            as_new=as_new,
        )

    async def insert(self, conn: Connection) -> None:
        """Insert the session, its summaries, messages and files in bulk (inside the caller's
        write transaction, which makes the row ids assigned here safe to predict)."""
        await conn.execute(
            "INSERT INTO sessions (id, space_id, title, model, source, discord_channel_id, "
            "discord_guild_id, parent_channel_id, topic, closed_at, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.session,
        )
        memory_map = await self._insert_memories(conn)
        await self._insert_messages(conn, memory_map)
        await conn.executemany(
            "INSERT INTO attachments (id, space_id, session_id, filename, content_type, size, "
            "data, source_url, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self.attachments,
        )

    async def _insert_memories(self, conn: Connection) -> dict[int, int]:
        """Summaries in id order, then condensed links; returns old id → new id."""
        ids = await _reserve_ids(conn, "memories", len(self.memories))
        memory_map = {memory.id: ids[n] for n, memory in enumerate(self.memories)}
        await conn.executemany(
            "INSERT INTO memories (id, space_id, session_id, summary, level, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (
                    memory_map[m.id],
                    self.space,
                    self.session_id,
                    m.summary,
                    m.level,
                    m.created_at,
                )
                for m in self.memories
            ],
        )
        # Linked afterwards: a summary is usually condensed into a later one.
        await conn.executemany(
            "UPDATE memories SET condensed_into = ? WHERE space_id = ? AND id = ?",
            [
                (memory_map[m.condensed_into], self.space, memory_map[m.id])
                for m in self.memories
                if m.condensed_into is not None
            ],
        )
        return memory_map

    async def _insert_messages(self, conn: Connection, memory_map: dict[int, int]) -> None:
        """Messages in id order with replies (even to later messages) and summaries renumbered."""
        ids = await _reserve_ids(conn, "messages", len(self.messages))
        message_map = {message.id: ids[n] for n, (message, _) in enumerate(self.messages)}
        await conn.executemany(
            "INSERT INTO messages (id, space_id, session_id, role, content, author_id, "
            "author_name, discord_message_id, reply_to, archived_at, memory_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    message_map[message.id],
                    self.space,
                    self.session_id,
                    message.role,
                    content,
                    message.author_id,
                    message.author_name,
                    None if self.as_new else message.discord_message_id,
                    None if message.reply_to is None else message_map[message.reply_to],
                    message.archived_at,
                    None if message.memory_id is None else memory_map[message.memory_id],
                    message.created_at,
                )
                for message, content in self.messages
            ],
        )


async def _reserve_ids(
    conn: Connection, table: Literal["messages", "memories"], count: int
) -> list[int]:
    """`count` new row ids for explicit inserts into `table`, ascending, never used before.

    SQLite: the ids AUTOINCREMENT would hand out next; the caller's write transaction holds
    the only writer. PostgreSQL: taken from the table's identity sequence (other writers go on
    taking theirs meanwhile; no table lock, so no lock-order deadlock with them).
    """
    if count <= 0:
        return []
    if conn.dialect == "postgresql":
        rows = await conn.execute_fetchall(
            f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) AS id "
            "FROM generate_series(1, ?) ORDER BY id",
            (count,),
        )
        return [int(row[0]) for row in rows]
    rows = list(
        await conn.execute_fetchall(
            f"SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), "
            f"COALESCE((SELECT max(id) FROM {table}), 0))",
            (table,),
        )
    )
    first = int(rows[0][0]) + 1
    return list(range(first, first + count))


async def _any_exists(conn: Connection, sql: str, values: list[Any]) -> bool:
    """Whether `sql` (taking the values as one list parameter) finds a row."""
    if not values:
        return False
    param = values if conn.dialect == "postgresql" else json.dumps(values)
    rows = await conn.execute_fetchall(sql, (param,))
    return bool(list(rows))


async def _refuse_existing(conn: Connection, data: SessionExport) -> None:
    # One parameter holding the whole list: a JSON array on SQLite, an array on PostgreSQL.
    in_list = "= ANY(?)" if conn.dialect == "postgresql" else "IN (SELECT value FROM json_each(?))"
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
