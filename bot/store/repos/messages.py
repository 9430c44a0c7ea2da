"""Conversation messages (short-term memory); summarised ones are archived, never deleted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine.connection import Statement, utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.engine.erase_lock import against_erase


@dataclass(frozen=True)
class StoredMessage:
    """One message of a session."""

    id: int
    space_id: str
    session_id: str
    role: str
    content: str
    author_id: str | None
    author_name: str | None
    discord_message_id: int | None
    reply_to: int | None
    archived_at: str | None
    memory_id: int | None
    created_at: str

    @property
    def order_key(self) -> tuple[int, int]:
        """Conversation order: an answer sits right after the message it answers."""
        return (self.reply_to if self.reply_to is not None else self.id, self.id)


_COLUMNS = (
    "id, space_id, session_id, role, content, author_id, author_name, discord_message_id, "
    "reply_to, archived_at, memory_id, created_at"
)

# A message's place in the conversation in SQL (StoredMessage.order_key's first part): an
# answer sits with the message it answers.
_ORDER_KEY = "COALESCE(reply_to, id)"


def _message(row: Row) -> StoredMessage:
    return StoredMessage(
        id=row["id"],
        space_id=row["space_id"],
        session_id=row["session_id"],
        role=row["role"],
        content=row["content"],
        author_id=row["author_id"],
        author_name=row["author_name"],
        discord_message_id=row["discord_message_id"],
        reply_to=row["reply_to"],
        archived_at=row["archived_at"],
        memory_id=row["memory_id"],
        created_at=row["created_at"],
    )


def conversation_order(messages: Sequence[StoredMessage]) -> list[StoredMessage]:
    """Messages sorted so that every answer follows its question."""
    return sorted(messages, key=lambda message: message.order_key)


# Operator-level (every space): the bot's start-up looks across its shards' spaces.
# A failed turn's notice is stored as this role, answering the question (reply_to): the turn
# is then closed (not cut off by a restart), and the model's context leaves it out.
FAILED_TURN_ROLE = "system"

_UNANSWERED = """
SELECT m.id, m.space_id, m.session_id, m.discord_message_id, s.discord_channel_id
FROM messages m JOIN sessions s ON s.space_id = m.space_id AND s.id = m.session_id
WHERE m.role = 'user' AND m.archived_at IS NULL AND m.discord_message_id IS NOT NULL
  AND s.discord_channel_id IS NOT NULL AND s.closed_at IS NULL
  AND m.created_at >= ? AND m.created_at < ?
  AND NOT EXISTS (
    SELECT 1 FROM messages n
    WHERE n.space_id = m.space_id AND n.session_id = m.session_id AND n.id > m.id
  )
ORDER BY m.id
"""


@dataclass(frozen=True)
class UnansweredMessage:
    """A user's message that is the last of its Discord conversation."""

    message_id: int
    space_id: str
    session_id: str
    discord_message_id: int
    channel_id: int


_ERASED_QUESTION = "FROM messages q WHERE q.space_id = ? AND q.id = ? AND q.erased_at IS NOT NULL"
_INSERT = (
    "INSERT INTO messages (space_id, session_id, role, content, author_id, author_name, "
    "discord_message_id, reply_to, created_at, recall_hidden) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id, content"
)
# A reply takes its question's placeholder, hidden and erased, when the question was erased.
_INSERT_REPLY = (
    "INSERT INTO messages (space_id, session_id, role, content, author_id, author_name, "
    "discord_message_id, reply_to, created_at, recall_hidden, erased_at) VALUES (?, ?, ?, "
    f"COALESCE((SELECT q.content {_ERASED_QUESTION}), ?), ?, ?, ?, ?, ?, "
    f"CASE WHEN EXISTS (SELECT 1 {_ERASED_QUESTION}) THEN 1 ELSE ? END, "
    f"(SELECT q.erased_at {_ERASED_QUESTION})) RETURNING id, content"
)


class MessageRepository:
    """Stores and reads the messages of a space's sessions."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        space: str,
        session_id: str,
        role: str,
        content: str,
        *,
        author_id: str | None = None,
        author_name: str | None = None,
        discord_message_id: int | None = None,
        reply_to: int | None = None,
        created_at: str | None = None,
        recall_hidden: bool = False,
    ) -> StoredMessage:
        """Insert a message (and touch its session) in one batch; the session must be in
        `space`. `recall_hidden`: its author's memory is off, so recall never indexes it.

        A reply to a message erased meanwhile (its turn ran during the erase) is stored erased:
        the placeholder its question holds, hidden from recall."""
        now = created_at or utcnow()
        values = (author_id, author_name, discord_message_id, reply_to, now)
        if reply_to is None:
            insert = Statement(
                _INSERT, (space, session_id, role, content, *values, int(recall_hidden))
            )
        else:
            insert = Statement(
                _INSERT_REPLY,
                (
                    *(space, session_id, role, space, reply_to, content, *values),
                    *(space, reply_to, int(recall_hidden), space, reply_to),
                ),
            )
        batch = [
            *against_erase(self._db.dialect, space),
            insert,
            Statement(
                "UPDATE sessions SET updated_at = ? WHERE space_id = ? AND id = ?",
                (now, space, session_id),
            ),
        ]
        inserted = (await self._db.write_batch(batch))[-2]
        row = await inserted.fetchone()
        message_id = 0 if row is None else int(row[0])
        return StoredMessage(
            id=message_id,
            space_id=space,
            session_id=session_id,
            role=role,
            content=content if row is None else str(row[1]),
            author_id=author_id,
            author_name=author_name,
            discord_message_id=discord_message_id,
            reply_to=reply_to,
            archived_at=None,
            memory_id=None,
            created_at=now,
        )

    async def get(self, space: str, message_id: int) -> StoredMessage | None:
        """One message of the space by id."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM messages WHERE space_id = ? AND id = ?", (space, message_id)
        )
        return None if row is None else _message(row)

    async def by_discord_id(self, space: str, discord_message_id: int) -> StoredMessage | None:
        """The message stored for a Discord message id, if any (deduplication on resume)."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM messages WHERE space_id = ? AND discord_message_id = ?",
            (space, discord_message_id),
        )
        return None if row is None else _message(row)

    async def recent_live(
        self, space: str, session_id: str, limit: int, *, up_to: int | None = None
    ) -> list[StoredMessage]:
        """The newest `limit` unarchived messages, in conversation order; with `up_to`, only
        the message of that id, those before it and the answers to them (a turn's view).

        Read newest id first (the index walk stops early, however long the archive), twice
        the limit: answers stored after later questions still find their place.
        """
        until = "" if up_to is None else f"AND {_ORDER_KEY} <= ? "
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM messages WHERE space_id = ? AND session_id = ? "
            f"AND archived_at IS NULL {until}ORDER BY id DESC LIMIT ?",
            (space, session_id, *(() if up_to is None else (up_to,)), limit * 2),
        )
        return conversation_order([_message(row) for row in rows])[-limit:]

    async def count_live(self, space: str, session_id: str) -> int:
        """How many unarchived messages the session has."""
        value = await self._db.scalar(
            "SELECT COUNT(*) FROM messages WHERE space_id = ? AND session_id = ? "
            "AND archived_at IS NULL",
            (space, session_id),
        )
        return int(value or 0)

    async def oldest_live(
        self, space: str, session_id: str, limit: int, *, before: int | None = None
    ) -> list[StoredMessage]:
        """The oldest `limit` unarchived messages, in conversation order; with `before`, only
        messages older than that id and the answers to them."""
        until = "" if before is None else f"AND {_ORDER_KEY} < ? "
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM messages WHERE space_id = ? AND session_id = ? "
            f"AND archived_at IS NULL {until}ORDER BY {_ORDER_KEY}, id LIMIT ?",
            (space, session_id, *(() if before is None else (before,)), limit),
        )
        return [_message(row) for row in rows]

    async def first_unanswered(self, space: str, session_id: str) -> int | None:
        """The oldest live user message after the newest answered one: its turn may still be
        waiting (in this process or another), so nothing from it on is summarised.

        Only live answers are looked at (the live-message index, however long the archive):
        archiving takes the oldest first, so a live question's answer is live too.
        """
        value = await self._db.scalar(
            "SELECT MIN(id) FROM messages WHERE space_id = ? AND session_id = ? "
            "AND role = 'user' AND archived_at IS NULL AND id > COALESCE(("
            "SELECT MAX(reply_to) FROM messages WHERE space_id = ? AND session_id = ? "
            "AND archived_at IS NULL), 0)",
            (space, session_id, space, session_id),
        )
        return None if value is None else int(value)

    async def unanswered_all_spaces(self, since: str, until: str) -> list[UnansweredMessage]:
        """Last messages of open Discord conversations, from a user, stored within
        [since, until) (ISO times): turns whose answer was never stored."""
        rows = await self._db.fetchall(_UNANSWERED, (since, until))
        return [
            UnansweredMessage(
                int(row["id"]),
                str(row["space_id"]),
                str(row["session_id"]),
                int(row["discord_message_id"]),
                int(row["discord_channel_id"]),
            )
            for row in rows
        ]

    async def is_recall_hidden(self, space: str, message_id: int) -> bool:
        """Whether the message was written with its author's member memory off."""
        value = await self._db.scalar(
            "SELECT recall_hidden FROM messages WHERE space_id = ? AND id = ?", (space, message_id)
        )
        return bool(value)

    async def all_for_session(self, space: str, session_id: str) -> list[StoredMessage]:
        """Every message of a session, archived ones included, in conversation order."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM messages WHERE space_id = ? AND session_id = ? ORDER BY id",
            (space, session_id),
        )
        return conversation_order([_message(row) for row in rows])
