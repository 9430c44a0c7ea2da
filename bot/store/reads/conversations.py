"""Reading conversations for the cockpit: a space's channels, a channel's threads, a transcript.

A channel groups the sessions that hang off it: a Discord thread's session by its parent
channel, a channel or DM conversation by its own channel; sessions outside Discord (terminal,
admin chat, imports) form the group without a channel (`channel_id` None).
A transcript is a session's messages in conversation order, archived ones included and marked,
each answer with the tool calls of its turn, plus the summaries covering the page's messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.repos.memories import Memory
from bot.store.repos.messages import StoredMessage, conversation_order
from bot.store.repos.sessions import Session
from bot.store.repos.tool_calls import ToolCallRecord, ToolCallRepository

# The group of a session: its parent channel (threads), else its own channel.
_CHANNEL = "COALESCE(parent_channel_id, discord_channel_id)"
_NEWEST = "9999"  # sorts after every stored time: "before" this is "from the newest on"


@dataclass(frozen=True)
class ChannelSummary:
    """A channel of a space with its conversations (None: sessions outside Discord).

    `name` is the channel's name from the channel directory (None: not seen by the bot).
    """

    channel_id: int | None
    threads: int
    open_threads: int
    last_activity: str
    name: str | None = None


@dataclass(frozen=True)
class ThreadSummary:
    """A conversation (session) in a channel, with its message counts."""

    session: Session
    messages: int
    archived_messages: int


@dataclass(frozen=True)
class TranscriptMessage:
    """A message with its turn's tool calls (on the answer; on the user message only when the
    turn never produced an answer)."""

    message: StoredMessage
    tool_calls: list[ToolCallRecord] = field(default_factory=list)


@dataclass(frozen=True)
class SummaryRange:
    """A summary (memory) with the messages it covers: ids first..last, `messages` of them.

    A condensed summary (level ≥ 1) covers what its condensed summaries covered.
    """

    memory: Memory
    first_message_id: int | None
    last_message_id: int | None
    messages: int


@dataclass(frozen=True)
class TranscriptPage:
    """One page of a transcript and the summaries that cover any of its messages."""

    items: list[TranscriptMessage]
    summaries: list[SummaryRange]
    last_id: int | None
    earlier_id: int | None = None  # the first id of this page when older messages exist


def _memory(row: Row) -> Memory:
    return Memory(
        id=row["id"],
        space_id=row["space_id"],
        session_id=row["session_id"],
        summary=row["summary"],
        level=row["level"],
        condensed_into=row["condensed_into"],
        created_at=row["created_at"],
    )


_SESSION_COLUMNS = (
    "id, space_id, title, model, source, discord_channel_id, discord_guild_id, "
    "parent_channel_id, topic, closed_at, created_at, updated_at"
)
_MESSAGE_COLUMNS = (
    "id, space_id, session_id, role, content, author_id, author_name, discord_message_id, "
    "reply_to, archived_at, memory_id, created_at"
)


class ConversationRepository:
    """Channel, thread and transcript reads of one space."""

    def __init__(self, db: Database, tool_calls: ToolCallRepository) -> None:
        self._db = db
        self._tool_calls = tool_calls

    async def channels(
        self, space: str, *, limit: int = 50, before: str | None = None
    ) -> list[ChannelSummary]:
        """The space's channels, most recently active first; `before` pages by last activity."""
        rows = await self._db.fetchall(
            "SELECT g.channel_id, g.threads, g.open_threads, g.last_activity, d.name FROM ("
            f"SELECT {_CHANNEL} AS channel_id, COUNT(*) AS threads, "
            "COUNT(*) - COUNT(closed_at) AS open_threads, MAX(updated_at) AS last_activity "
            f"FROM sessions WHERE space_id = ? GROUP BY {_CHANNEL} "
            "HAVING MAX(updated_at) < ?) AS g "
            "LEFT JOIN directory_channels d ON d.space_id = ? AND d.channel_id = g.channel_id "
            "ORDER BY g.last_activity DESC LIMIT ?",
            (space, before or _NEWEST, space, limit),
        )
        return [
            ChannelSummary(
                row["channel_id"],
                row["threads"],
                row["open_threads"],
                row["last_activity"],
                row["name"],
            )
            for row in rows
        ]

    async def threads(
        self,
        space: str,
        channel_id: int | None,
        *,
        every_channel: bool = False,
        limit: int = 50,
        before: str | None = None,
    ) -> list[ThreadSummary]:
        """Sessions of one channel (None: outside Discord), or of every channel with
        `every_channel`; most recently active first, `before` pages by updated_at."""
        channel_params: tuple[int, ...] = ()
        if every_channel:
            channel_sql = "TRUE"
        elif channel_id is None:
            channel_sql = f"{_CHANNEL} IS NULL"
        else:
            channel_sql, channel_params = f"{_CHANNEL} = ?", (channel_id,)
        rows = await self._db.fetchall(
            f"SELECT {_SESSION_COLUMNS}, "
            "(SELECT COUNT(*) FROM messages m WHERE m.space_id = s.space_id "
            "AND m.session_id = s.id) AS n_messages, "
            "(SELECT COUNT(*) FROM messages m WHERE m.space_id = s.space_id "
            "AND m.session_id = s.id AND m.archived_at IS NOT NULL) AS n_archived "
            f"FROM sessions s WHERE space_id = ? AND {channel_sql} AND updated_at < ? "
            "ORDER BY updated_at DESC LIMIT ?",
            (space, *channel_params, before or _NEWEST, limit),
        )
        return [
            ThreadSummary(
                Session(**{key: row[key] for key in _SESSION_COLUMNS.split(", ")}),
                row["n_messages"],
                row["n_archived"],
            )
            for row in rows
        ]

    async def transcript(
        self,
        space: str,
        session_id: str,
        *,
        limit: int = 100,
        after_id: int | None = None,
        before_id: int | None = None,
        latest: bool = False,
    ) -> TranscriptPage:
        """Messages with id > `after_id` (up to `limit`), in conversation order; with
        `before_id` (or `latest`) the newest `limit` messages below that id (or of all)."""
        if before_id is not None or latest:
            upper = "AND id < ? " if before_id is not None else ""
            bound = (before_id,) if before_id is not None else ()
            rows = await self._db.fetchall(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE space_id = ? AND session_id = ? "
                f"{upper}ORDER BY id DESC LIMIT ?",
                (space, session_id, *bound, limit),
            )
            rows = rows[::-1]
        else:
            rows = await self._db.fetchall(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE space_id = ? AND session_id = ? "
                "AND id > ? ORDER BY id LIMIT ?",
                (space, session_id, after_id or 0, limit),
            )
        messages = conversation_order(
            [StoredMessage(**{key: row[key] for key in row.keys()}) for row in rows]  # noqa: SIM118
        )
        if not messages:
            return TranscriptPage([], [], None)
        items = await self._with_tool_calls(space, session_id, messages)
        ids = [message.id for message in messages]
        summaries = await self._summaries(space, session_id, min(ids), max(ids))
        earlier = await self._db.scalar(
            "SELECT 1 FROM messages WHERE space_id = ? AND session_id = ? AND id < ? LIMIT 1",
            (space, session_id, min(ids)),
        )
        return TranscriptPage(items, summaries, max(ids), min(ids) if earlier else None)

    async def has_later(self, space: str, session_id: str, after_id: int) -> bool:
        """Whether the session has messages after `after_id`."""
        found = await self._db.scalar(
            "SELECT 1 FROM messages WHERE space_id = ? AND session_id = ? AND id > ? LIMIT 1",
            (space, session_id, after_id),
        )
        return found is not None

    async def _with_tool_calls(
        self, space: str, session_id: str, messages: list[StoredMessage]
    ) -> list[TranscriptMessage]:
        turn_ids = sorted(
            {m.id for m in messages if m.role == "user"}
            | {m.reply_to for m in messages if m.role == "assistant" and m.reply_to is not None}
        )
        calls = await self._tool_calls.for_messages(space, session_id, turn_ids)
        by_turn: dict[int, list[ToolCallRecord]] = {}
        for call in calls:
            if call.message_id is not None:
                by_turn.setdefault(call.message_id, []).append(call)
        answered = await self._answered(space, session_id, list(by_turn))
        items = []
        for message in messages:
            if message.role == "assistant" and message.reply_to is not None:
                own = by_turn.get(message.reply_to, [])
            elif message.role == "user" and message.id not in answered:
                own = by_turn.get(message.id, [])
            else:
                own = []
            items.append(TranscriptMessage(message, own))
        return items

    async def _answered(self, space: str, session_id: str, turn_ids: list[int]) -> set[int]:
        """Which of these user messages have an answer."""
        if not turn_ids:
            return set()
        marks = ",".join("?" for _ in turn_ids)
        rows = await self._db.fetchall(
            "SELECT DISTINCT reply_to FROM messages WHERE space_id = ? AND session_id = ? "
            f"AND role = 'assistant' AND reply_to IN ({marks})",
            (space, session_id, *turn_ids),
        )
        return {int(row[0]) for row in rows}

    async def _summaries(
        self, space: str, session_id: str, first: int, last: int
    ) -> list[SummaryRange]:
        memories = [
            _memory(row)
            for row in await self._db.fetchall(
                "SELECT id, space_id, session_id, summary, level, condensed_into, created_at "
                "FROM memories WHERE space_id = ? AND session_id = ? ORDER BY id",
                (space, session_id),
            )
        ]
        spans: dict[int, tuple[int, int, int]] = {
            int(row["memory_id"]): (int(row["lo"]), int(row["hi"]), int(row["n"]))
            for row in await self._db.fetchall(
                "SELECT memory_id, MIN(id) AS lo, MAX(id) AS hi, COUNT(*) AS n FROM messages "
                "WHERE space_id = ? AND session_id = ? AND memory_id IS NOT NULL "
                "GROUP BY memory_id",
                (space, session_id),
            )
        }
        # Children have smaller ids than the summary they were condensed into.
        for memory in memories:
            parent = memory.condensed_into
            if parent is not None and memory.id in spans:
                lo, hi, n = spans[memory.id]
                if parent in spans:
                    plo, phi, pn = spans[parent]
                    spans[parent] = (min(lo, plo), max(hi, phi), n + pn)
                else:
                    spans[parent] = (lo, hi, n)
        result = []
        for memory in memories:
            span = spans.get(memory.id)
            if span is not None and (span[1] < first or span[0] > last):
                continue
            if span is None:
                result.append(SummaryRange(memory, None, None, 0))
            else:
                result.append(SummaryRange(memory, *span))
        return result
