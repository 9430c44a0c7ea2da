"""Forgetting a member's facts: the facts, and what they were said in, in one transaction.

A fact was taken from a message ("remember that my emu is called …", or one the `remember`
tool kept a fact from: `member_facts.message_id`; facts kept before it was recorded are matched
to the member's message of their conversation that holds the fact). Forgetting the fact blanks
that message and the bot's answers to it, as an erase blanks a member's messages
(`member_erase`): text, tags, recall's terms and vectors, the tool calls of its turn, the
summaries holding it (summarised again), the API log bodies since; and, through
`erase_quotes`, the bot's answers anywhere in the space quoting the fact or the message, and
the conversation titles made from or quoting them ("Chat with <name>" instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from bot.store.engine.connection import Connection
from bot.store.engine.dialect import Row
from bot.store.engine.erase_lock import hold_for_erase
from bot.store.erase.member_erase import (
    blank_messages,
    blank_tool_calls,
    chunks,
    drop_summaries,
    with_condensations,
)
from bot.store.erase.quotes import (
    DiscordFollowUp,
    Fetch,
    ScannedAhead,
    answers_quoting,
    discord_places,
    newest_message,
    normalized,
    quotes_of,
    retitle,
    scanned_ahead,
    summaries_holding,
)
from bot.store.erase.traces import Traces as LogTraces
from bot.store.erase.traces import remove_traces


@dataclass(frozen=True)
class ForgotFacts:
    """What forgetting facts removed; `sessions` are the threads to summarise again."""

    facts: int
    messages: int = 0
    sessions: tuple[str, ...] = ()
    discord: DiscordFollowUp = field(default_factory=DiscordFollowUp)


@dataclass
class _Sources:
    """The messages the facts were said in, the answers to them, the summaries holding them."""

    said: list[int]
    answers: list[int]
    memories: set[int]
    texts: list[str]
    since: str | None


async def _guessed(
    fetch: Fetch, space: str, author: str | None, session: str | None, fact: str
) -> list[int]:
    """A fact kept before its message was recorded: the author's messages of its session
    holding it."""
    if session is None:
        return []
    who, params = (
        ("author_id IS NULL AND role = 'user'", ())
        if author is None
        else (
            "author_id = ?",
            (author,),
        )
    )
    rows = await fetch(
        f"SELECT id, content FROM messages WHERE space_id = ? AND session_id = ? AND {who}",
        (space, session, *params),
    )
    key = normalized(fact)
    return [int(r["id"]) for r in rows if key and key in normalized(str(r["content"] or ""))]


async def _sources(fetch: Fetch, space: str, said: list[int]) -> _Sources:
    """The messages, the bot's answers to them, their summaries, texts and first date."""
    found = _Sources([], [], set(), [], None)
    for marks, ids in chunks(sorted(set(said))):
        rows = await fetch(
            "SELECT id, role, content, memory_id, created_at FROM messages WHERE space_id = ? "
            f"AND (id IN ({marks}) OR (role = 'assistant' AND reply_to IN ({marks})))",
            (space, *ids, *ids),
        )
        for row in rows:
            mine = int(row["id"]) in ids
            (found.said if mine else found.answers).append(int(row["id"]))
            if mine:
                found.texts.append(str(row["content"] or ""))
            if row["memory_id"] is not None:
                found.memories.add(int(row["memory_id"]))
            created = str(row["created_at"])
            found.since = created if found.since is None else min(found.since, created)
    return found


def _which(fact_id: int | None) -> tuple[str, tuple[int, ...]]:
    return ("", ()) if fact_id is None else (" AND id = ?", (fact_id,))


async def _facts_and_sources(
    fetch: Fetch, space: str, member_id: str, author: str | None, fact_id: int | None
) -> tuple[list[Row], _Sources]:
    """The facts to forget and what they were said in."""
    which, params = _which(fact_id)
    facts = await fetch(
        "SELECT id, fact, message_id, session_id, created_at FROM member_facts "
        f"WHERE space_id = ? AND member_id = ?{which}",
        (space, member_id, *params),
    )
    said: list[int] = []
    for fact in facts:
        if fact["message_id"] is not None:
            said.append(int(fact["message_id"]))
        else:
            said += await _guessed(fetch, space, author, fact["session_id"], str(fact["fact"]))
    return facts, await _sources(fetch, space, said)


def _texts(facts: list[Row], found: _Sources) -> list[str]:
    return [*(str(f["fact"]) for f in facts), *found.texts]


async def forget_ahead(
    fetch: Fetch, space: str, member_id: str, author: str | None, fact_id: int | None
) -> ScannedAhead:
    """The answers quoting the facts (or what they were said in), before the transaction."""
    top = await newest_message(fetch, space)
    facts, found = await _facts_and_sources(fetch, space, member_id, author, fact_id)
    if not facts:
        return ScannedAhead()
    return await scanned_ahead(fetch, space, quotes_of(_texts(facts, found)), top)


async def forget_facts(
    conn: Connection,
    space: str,
    member_id: str,
    author: str | None,
    *,
    fact_id: int | None,
    placeholder: str,
    neutral: str,
    ahead: ScannedAhead | None = None,
) -> ForgotFacts:
    """Forget one fact of `member_id` (`fact_id`) or all of them, inside the caller's
    transaction; `author` as in `erase_member`, `neutral` the title of a renamed thread,
    `ahead` what `forget_ahead` found."""
    await hold_for_erase(conn, space)
    facts, found = await _facts_and_sources(
        conn.execute_fetchall, space, member_id, author, fact_id
    )
    if not facts:
        return ForgotFacts(0)
    which, params = _which(fact_id)
    await conn.execute(
        f"DELETE FROM member_facts WHERE space_id = ? AND member_id = ?{which}",
        (space, member_id, *params),
    )
    since = min([str(f["created_at"]) for f in facts] + ([found.since] if found.since else []))
    forgot = await _blank(
        conn,
        space,
        found,
        _texts(facts, found),
        since,
        placeholder=placeholder,
        neutral=neutral,
        ahead=ahead or ScannedAhead(),
    )
    return replace(forgot, facts=len(facts))


async def _blank(
    conn: Connection,
    space: str,
    found: _Sources,
    texts: list[str],
    since: str,
    *,
    placeholder: str,
    neutral: str,
    ahead: ScannedAhead,
) -> ForgotFacts:
    """Blank the messages, the answers quoting the texts, the titles."""
    quotes = quotes_of(texts)
    later, _ = await answers_quoting(conn.execute_fetchall, space, quotes, ahead.upto)
    quoting = sorted({*ahead.found, *later} - {*found.said, *found.answers})
    held = await summaries_holding(conn, space, quoting)
    memory_ids, sessions = await with_condensations(conn, space, found.memories | held)
    await drop_summaries(conn, space, memory_ids)
    await blank_tool_calls(conn, space, found.said)
    renamed = await retitle(conn, space, quotes, {}, neutral)
    blanked = sorted({*found.said, *found.answers, *quoting})
    channels, sources = await discord_places(conn, space, blanked)
    await blank_messages(conn, space, blanked, placeholder)
    await remove_traces(conn, space, LogTraces(since=since), placeholder)
    return ForgotFacts(
        facts=0,
        messages=len(blanked),
        sessions=tuple(sorted(sessions)),
        discord=DiscordFollowUp(placeholder, channels, sources, tuple(renamed), tuple(texts)),
    )
