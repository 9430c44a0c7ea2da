"""Recall's hits and the SQL fragments its reads share: a message or summary row as a hit,
the thread a search leaves out, the columns and join every message read selects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.store.engine.dialect import Row, like_pattern
from bot.store.reads.recall_rank import Terms, matched_terms

HitKind = Literal["message", "summary"]

# A thread is named after its first message: when that message stays out of recall (a request
# to remember, written with memory off, erased), so does the name — a conversation of an older
# version may still carry it (the hit shows "untitled").
SESSION_TITLE = (
    "CASE WHEN (SELECT f.recall_hidden FROM messages f WHERE f.space_id = s.space_id "
    "AND f.session_id = s.id ORDER BY f.id LIMIT 1) = 1 THEN '' ELSE s.title END AS title"
)
MESSAGE_COLUMNS = (
    "m.id, m.session_id, m.role, m.author_name, m.content, m.created_at, "
    f"m.discord_message_id, {SESSION_TITLE}, s.discord_guild_id, s.discord_channel_id, "
    "s.parent_channel_id"
)
SESSION_JOIN = "JOIN sessions s ON s.space_id = m.space_id AND s.id = m.session_id"


@dataclass(frozen=True)
class Exclude:
    """A thread left out of a search: its session and, on Discord, every session of its
    channel (earlier ones a /reset closed), so that a reset thread does not get its past back.
    """

    session_id: str
    channel_id: int | None = None

    def inner(self, column: str) -> tuple[str, list[object]]:
        """`AND <column> <> ?` for a message or summary row."""
        return f" AND {column} <> ?", [self.session_id]

    def outer(self) -> tuple[str, list[object]]:
        """`AND` on the joined session `s`: not of the thread's channel."""
        if self.channel_id is None:
            return "", []
        return " AND (s.discord_channel_id IS NULL OR s.discord_channel_id <> ?)", [self.channel_id]


def excluding(exclude: Exclude | None, column: str) -> tuple[str, list[object]]:
    """The session and channel conditions of `exclude` ('' without one)."""
    if exclude is None:
        return "", []
    inner, inner_params = exclude.inner(column)
    outer, outer_params = exclude.outer()
    return inner + outer, [*inner_params, *outer_params]


@dataclass(frozen=True)
class RecallLine:
    """A neighbouring message shown around a hit."""

    message_id: int
    role: str
    author_name: str | None
    content: str
    created_at: str


@dataclass(frozen=True)
class RecallHit:
    """One match: a message (who said it, where, its neighbours) or a session's summary.

    `author_name` is None for the bot's own messages; `score` is the engine's (lower is
    better, 0 for LIKE matches); `matched` the query terms it contains. `lifted`: a message
    that joined the ranking only as the neighbour of a hit (`recall_neighbours`), holding
    none of the query's terms: context of that hit, not a match of its own.
    """

    kind: HitKind
    id: int
    session_id: str
    session_title: str
    role: str | None
    author_name: str | None
    content: str
    created_at: str
    discord_guild_id: int | None
    discord_channel_id: int | None
    discord_message_id: int | None
    matched: tuple[str, ...]
    score: float
    before: tuple[RecallLine, ...] = ()
    after: tuple[RecallLine, ...] = ()
    parent_channel_id: int | None = None
    lifted: bool = False

    @property
    def jump_url(self) -> str | None:
        """The Discord link to the message (`@me` in DMs), when it is on Discord: in the
        thread it was said in, except a thread's opening message, which is in the parent
        channel (the bot opens a thread on a message, so the thread has that message's id)."""
        if self.discord_message_id is None or self.discord_channel_id is None:
            return None
        guild = self.discord_guild_id if self.discord_guild_id is not None else "@me"
        channel = self.discord_channel_id
        if self.discord_message_id == channel and self.parent_channel_id is not None:
            channel = self.parent_channel_id
        return f"https://discord.com/channels/{guild}/{channel}/{self.discord_message_id}"


@dataclass(frozen=True)
class RecallResult:
    """The query's terms and its hits, best first; `capped`: a candidate read returned as
    many rows as it may, so more messages may match than the hits hold."""

    terms: Terms
    hits: list[RecallHit]
    capped: bool = False


def any_like(
    column: str, terms: tuple[str, ...], like: str, *, every: bool = False
) -> tuple[str, list[str]]:
    """`(col LIKE ? OR …)` over `terms` and its patterns (AND-ed with `every`)."""
    joiner = " AND " if every else " OR "
    clause = joiner.join(f"{column} {like} ? ESCAPE '\\'" for _ in terms)
    return f"({clause})", [like_pattern(term) for term in terms]


def message_hit(row: Row, terms: Terms, score: float, also: tuple[str, ...] = ()) -> RecallHit:
    """A message row as a hit; `also`: terms it matched some other way (its index words)."""
    return RecallHit(
        kind="message",
        id=row["id"],
        session_id=row["session_id"],
        session_title=row["title"] or "",
        role=row["role"],
        author_name=row["author_name"],
        content=row["content"],
        created_at=row["created_at"],
        discord_guild_id=row["discord_guild_id"],
        discord_channel_id=row["discord_channel_id"],
        discord_message_id=row["discord_message_id"],
        parent_channel_id=row["parent_channel_id"],
        matched=union(matched_terms(row["content"], terms), also)
        if also
        else matched_terms(row["content"], terms),
        score=score,
    )


def summary_hit(row: Row, terms: Terms) -> RecallHit:
    """A summary row as a hit."""
    return RecallHit(
        kind="summary",
        id=row["id"],
        session_id=row["session_id"],
        session_title=row["title"] or "",
        role=None,
        author_name=None,
        content=row["summary"],
        created_at=row["created_at"],
        discord_guild_id=row["discord_guild_id"],
        discord_channel_id=row["discord_channel_id"],
        discord_message_id=None,
        matched=matched_terms(row["summary"], terms),
        score=0.0,
    )


def union(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    """Both tuples' items, in order, each once."""
    return tuple(dict.fromkeys((*first, *second)))


def line_of(row: Row) -> RecallLine:
    """A message row as a neighbouring line."""
    return RecallLine(row["id"], row["role"], row["author_name"], row["content"], row["created_at"])
