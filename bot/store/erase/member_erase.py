"""Erasing a member from a space ("erase me"): the writes, in one transaction.

What goes, in the member's space only:
- their facts and their memory switch;
- the text of every message they wrote, and of the bot's answers to those messages (an answer
  usually repeats what it answers): replaced by a placeholder and hidden from recall; the
  SQLite FTS5 triggers take the old text out of `messages_fts`, PostgreSQL's trigram index
  follows the column;
- their words in recall's term index and their vectors in its embeddings;
- the tags of those messages, the arguments and sources of the tool calls their turns made;
- the title of a session their message opened (a thread is named after its first message),
  and the titles quoting their texts (`erase_quotes`);
- the bot's answers to other members, in any thread of the space, that quote their texts or
  facts (`erase_quotes`), with those answers' tags, terms, vectors and summaries;
- every summary holding one of those messages, and the summaries it was condensed into (with
  their embeddings and tags): the messages they replaced are un-archived and the summaries
  they had condensed are live again, so the summariser rebuilds the thread's long-term memory
  from what is left (`ErasedMember.sessions` lists the threads to summarise again);
- the pool words, attached files, API log bodies and web knowledge their texts left
  (`erase_traces`).

Erased messages carry `erased_at`. What is written from a message while it is being erased
cannot bring its text back: a summary is stored only if the texts it was made of are unchanged,
an answer to an erased question is stored as the placeholder, tags and pool words of an erased
message are not written (see `erase_lock` for PostgreSQL's concurrent transactions).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final

from bot.store.engine.connection import Connection, utcnow
from bot.store.engine.erase_lock import hold_for_erase
from bot.store.erase.quotes import (
    DiscordFollowUp,
    Fetch,
    ScannedAhead,
    answers_quoting,
    discord_places,
    newest_message,
    quotes_of,
    retitle,
    scanned_ahead,
    summaries_holding,
)
from bot.store.erase.traces import find_traces, knowledge_they_caused, remove_traces

# Ids per IN (...) list: well under both engines' limits on bound parameters.
CHUNK: Final = 500
# The tables whose rows an erase or a forget overwrites or deletes (`Database.scrub` then
# takes the old bytes off the disk), and the full-text indexes over them.
SCRUBBED_TABLES: Final = (
    "messages", "recall_terms", "message_embeddings", "message_tags", "memories",
    "memory_tags", "member_facts", "member_memory", "sessions", "tool_calls", "api_logs",
    "attachments", "word_pool", "word_pool_authors", "topic_posts", "knowledge_entries",
)  # fmt: skip
SCRUBBED_FTS: Final = ("messages_fts", "recall_terms_fts", "knowledge_fts")


@dataclass(frozen=True)
class ErasedMember:
    """What an erase removed; `sessions` are the threads whose summaries must be rebuilt."""

    facts: int
    messages: int
    tags: int
    summaries: int
    sessions: tuple[str, ...]
    # (session, attachment id) of the files their messages attached, now deleted.
    attachments: tuple[tuple[str, str], ...] = ()
    # API log rows whose bodies were blanked.
    logs: int = 0
    # Knowledge entries their web searches saved (the knowledge service deletes them).
    knowledge: tuple[int, ...] = ()
    # Bot answers to others that quoted them, blanked too (counted in `messages`).
    quoting: int = 0
    # What the bot still shows in Discord of their texts (see `erase_quotes`).
    discord: DiscordFollowUp = field(default_factory=DiscordFollowUp)


def chunks(ids: Sequence[int]) -> Iterator[tuple[str, tuple[int, ...]]]:
    """`?, ?, …` and the ids, CHUNK at a time."""
    for start in range(0, len(ids), CHUNK):
        part = tuple(ids[start : start + CHUNK])
        yield ",".join("?" for _ in part), part


def _theirs(alias: str, author: str | None) -> tuple[str, tuple[str, ...]]:
    """Messages `alias` the member wrote (`author` None: the local user of a local space)."""
    if author is None:
        return f"{alias}.author_id IS NULL AND {alias}.role = 'user'", ()
    return f"{alias}.author_id = ?", (author,)


async def scan_ahead(fetch: Fetch, space: str, member_id: str, author: str | None) -> ScannedAhead:
    """Find the answers quoting the member's texts and facts, outside any transaction."""
    top = await newest_message(fetch, space)
    mine, params = _theirs("m", author)
    said = await fetch(
        f"SELECT m.content FROM messages m WHERE m.space_id = ? AND {mine}", (space, *params)
    )
    facts = await fetch(
        "SELECT fact FROM member_facts WHERE space_id = ? AND member_id = ?", (space, member_id)
    )
    texts = [str(r["content"] or "") for r in said] + [str(r["fact"]) for r in facts]
    return await scanned_ahead(fetch, space, quotes_of(texts), top)


@dataclass
class _Found:
    """Their messages, the bot's answers to them, the summaries holding either, their texts."""

    authored: list[int]
    answers: list[int]
    memories: set[int]
    texts: list[str]


async def _their_messages(conn: Connection, space: str, author: str | None) -> _Found:
    """Their messages, the bot's answers to them, the summaries holding either."""
    mine, mine_params = _theirs("m", author)
    asked, asked_params = _theirs("q", author)
    rows = await conn.execute_fetchall(
        "SELECT m.id, m.memory_id, m.role, m.content FROM messages m WHERE m.space_id = ? AND "
        f"(({mine}) OR (m.role = 'assistant' AND m.reply_to IN "
        f"(SELECT q.id FROM messages q WHERE q.space_id = ? AND {asked}))) ORDER BY m.id",
        (space, *mine_params, space, *asked_params),
    )
    theirs = [r for r in rows if r["role"] != "assistant"]
    return _Found(
        authored=[int(r["id"]) for r in theirs],
        answers=[int(r["id"]) for r in rows if r["role"] == "assistant"],
        memories={int(r["memory_id"]) for r in rows if r["memory_id"] is not None},
        texts=[str(r["content"] or "") for r in theirs],
    )


async def with_condensations(
    conn: Connection, space: str, found: set[int]
) -> tuple[list[int], set[str]]:
    """`found` and every summary they were condensed into, up the chain; their sessions."""
    chosen: set[int] = set()
    sessions: set[str] = set()
    frontier = set(found)
    while frontier:
        chosen |= frontier
        above: set[int] = set()
        for marks, ids in chunks(sorted(frontier)):
            rows = await conn.execute_fetchall(
                f"SELECT session_id, condensed_into FROM memories WHERE space_id = ? "
                f"AND id IN ({marks})",
                (space, *ids),
            )
            for row in rows:
                sessions.add(str(row["session_id"]))
                if row["condensed_into"] is not None:
                    above.add(int(row["condensed_into"]))
        frontier = above - chosen
    return sorted(chosen), sessions


async def drop_summaries(conn: Connection, space: str, memory_ids: Sequence[int]) -> int:
    """Delete the summaries; their messages go back to live, what they condensed is live."""
    deleted = 0
    for marks, ids in chunks(memory_ids):
        await conn.execute(
            "UPDATE messages SET archived_at = NULL, memory_id = NULL "
            f"WHERE space_id = ? AND memory_id IN ({marks})",
            (space, *ids),
        )
        await conn.execute(
            f"UPDATE memories SET condensed_into = NULL WHERE space_id = ? "
            f"AND condensed_into IN ({marks})",
            (space, *ids),
        )
        await conn.execute(
            f"DELETE FROM memory_tags WHERE space_id = ? AND memory_id IN ({marks})",
            (space, *ids),
        )
        cursor = await conn.execute(
            f"DELETE FROM memories WHERE space_id = ? AND id IN ({marks})", (space, *ids)
        )
        deleted += cursor.rowcount
    return deleted


async def blank_messages(
    conn: Connection, space: str, message_ids: Sequence[int], placeholder: str
) -> int:
    """Untag the messages, replace their text by `placeholder`, hide them from recall."""
    tags = 0
    now = utcnow()
    for marks, ids in chunks(message_ids):
        cursor = await conn.execute(
            f"DELETE FROM message_tags WHERE space_id = ? AND message_id IN ({marks})",
            (space, *ids),
        )
        tags += cursor.rowcount
        # Their words leave recall's term index too (the FTS triggers follow its rows).
        await conn.execute(
            f"DELETE FROM recall_terms WHERE space_id = ? AND id IN ({marks})", (space, *ids)
        )
        # And their vectors leave recall's embeddings.
        await conn.execute(
            f"DELETE FROM message_embeddings WHERE space_id = ? AND message_id IN ({marks})",
            (space, *ids),
        )
        # tagged_at stays set: the tagger's backfill must not tag the placeholder.
        await conn.execute(
            "UPDATE messages SET content = ?, recall_hidden = 1, erased_at = ?, "
            f"tagged_at = COALESCE(tagged_at, ?) WHERE space_id = ? AND id IN ({marks})",
            (placeholder, now, now, space, *ids),
        )
    return tags


async def blank_tool_calls(conn: Connection, space: str, authored: Sequence[int]) -> None:
    """Forget what the turns of these messages asked their tool calls."""
    for marks, ids in chunks(authored):
        await conn.execute(
            "UPDATE tool_calls SET arguments_json = '{}', sources_json = '[]', error = NULL "
            f"WHERE space_id = ? AND message_id IN ({marks})",
            (space, *ids),
        )


async def _opened_by(conn: Connection, space: str, author: str | None) -> list[str]:
    """The sessions their message opened (a thread is named after its first message)."""
    mine, params = _theirs("m", author)
    rows = await conn.execute_fetchall(
        f"SELECT DISTINCT m.session_id FROM messages m WHERE m.space_id = ? AND {mine} "
        "AND NOT EXISTS (SELECT 1 FROM messages f WHERE f.space_id = m.space_id "
        "AND f.session_id = m.session_id AND f.id < m.id)",
        (space, *params),
    )
    return [str(row["session_id"]) for row in rows]


async def _their_facts(conn: Connection, space: str, member_id: str) -> list[str]:
    rows = await conn.execute_fetchall(
        "SELECT fact FROM member_facts WHERE space_id = ? AND member_id = ?", (space, member_id)
    )
    return [str(row["fact"]) for row in rows]


async def erase_member(
    conn: Connection,
    space: str,
    member_id: str,
    author: str | None,
    placeholder: str,
    *,
    neutral: str | None = None,
    ahead: ScannedAhead | None = None,
) -> ErasedMember:
    """Erase `member_id` from `space` inside the caller's transaction.

    `author` is the `messages.author_id` of their messages (None: the local user's, stored
    without one). `neutral` names a thread whose title quoted them ("Chat with {name}", the
    name of who opened it); the threads they opened are named `placeholder`. `ahead`: the
    quoting answers `scan_ahead` found (without it the whole scan runs here).
    """
    await hold_for_erase(conn, space)
    found = await _their_messages(conn, space, author)
    texts = [*found.texts, *await _their_facts(conn, space, member_id)]
    quotes = quotes_of(texts)
    ahead = ahead or ScannedAhead()
    later, _ = await answers_quoting(conn.execute_fetchall, space, quotes, ahead.upto)
    quoting = sorted({*ahead.found, *later} - {*found.authored, *found.answers})
    held = await summaries_holding(conn, space, quoting)
    memory_ids, sessions = await with_condensations(conn, space, found.memories | held)
    summaries = await drop_summaries(conn, space, memory_ids)
    knowledge = await knowledge_they_caused(conn, space, found.authored)
    await blank_tool_calls(conn, space, found.authored)
    opened = dict.fromkeys(await _opened_by(conn, space, author), placeholder)
    renamed = await retitle(conn, space, quotes, opened, neutral or placeholder)
    erased = sorted([*found.authored, *found.answers, *quoting])
    channels, sources = await discord_places(conn, space, erased)
    traces = await find_traces(conn, space, author, erased)
    tags = await blank_messages(conn, space, erased, placeholder)
    logs = await remove_traces(conn, space, traces, placeholder)
    facts = await conn.execute(
        "DELETE FROM member_facts WHERE space_id = ? AND member_id = ?", (space, member_id)
    )
    await conn.execute(
        "DELETE FROM member_memory WHERE space_id = ? AND member_id = ?", (space, member_id)
    )
    return ErasedMember(
        facts=facts.rowcount,
        messages=len(erased),
        tags=tags,
        summaries=summaries,
        sessions=tuple(sorted(sessions)),
        attachments=tuple(sorted(traces.attachments)),
        logs=logs,
        knowledge=knowledge,
        quoting=len(quoting),
        discord=DiscordFollowUp(placeholder, channels, sources, tuple(renamed), tuple(texts)),
    )
