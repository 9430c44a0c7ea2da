"""What an erase or a forget blanks beyond the texts themselves, in the same transaction.

- The bot's answers, in any thread of the space, that quote a blanked text (`Quotes`: a run of
  its characters) — "Alice said her cat is Mochi-Kinako" in an answer to another member.
- The conversation titles made from a blanked text or quoting one: a thread is named after its
  first message, and recall shows the name with every hit of the thread, to every member.
- What the bot still shows in Discord (`DiscordFollowUp`): the threads to rename, where to
  look for its own messages to edit. Other people's Discord messages are not the bot's to edit.

`Quotes` judges a quote on the characters themselves (case and spacing ignored), not on
words: Japanese has no spaces. A run of QUOTE_CHARS characters of a text (CJK_QUOTE_CHARS in
a text with CJK characters, which say more each), or the whole of a shorter one, counts; a
text shorter than MIN_CHARS is too common to count. Common phrases longer than a run can make
an answer count as a quote: an erase errs towards blanking.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from bot.store.engine.connection import Connection
from bot.store.engine.dialect import Params, Row
from bot.text.scripts import has_cjk

# A read: `Connection.execute_fetchall` inside a transaction, `Database.fetchall` before one.
Fetch = Callable[[str, Params], Awaitable[list[Row]]]

QUOTE_CHARS: Final = 16
CJK_QUOTE_CHARS: Final = 8
MIN_CHARS: Final = 6


def normalized(text: str) -> str:
    """`text` case-folded, its whitespace runs as single spaces."""
    return " ".join(text.casefold().split())


class Quotes:
    """The runs of `texts` a quote of them repeats."""

    def __init__(self, texts: Iterable[str]) -> None:
        self._runs: dict[int, set[str]] = {}
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        """Count quotes of `text` too."""
        flat = normalized(text)
        if len(flat) < MIN_CHARS:
            return
        run = CJK_QUOTE_CHARS if has_cjk(flat) else QUOTE_CHARS
        size = min(run, len(flat))
        runs = self._runs.setdefault(size, set())
        runs.update(flat[start : start + size] for start in range(len(flat) - size + 1))

    def __bool__(self) -> bool:
        return bool(self._runs)

    def quoted_in(self, text: str, besides: str = "") -> bool:
        """Whether `text` repeats a run of one of the texts that `besides` (what `text`
        answers: an answer repeating its own question quotes the asker) does not hold."""
        flat, asked = normalized(text), normalized(besides)
        for size, runs in self._runs.items():
            found = _runs_of(flat, size) & runs
            if found and (not asked or found - _runs_of(asked, size)):
                return True
        return False


def _runs_of(flat: str, size: int) -> set[str]:
    return {flat[start : start + size] for start in range(len(flat) - size + 1)}


# Answers read per round of the scan for quotes.
SCAN: Final = 1000
# The framing the attachment intake writes around a file (the same in every message): not
# the member's words, so no quote of them.
_FRAMING: Final = re.compile(r"\[attachment:[^\]\n]*\]|^----- (?:begin|end) .* -----$", re.M)


def quotes_of(texts: Iterable[str]) -> Quotes:
    """What counts as quoting `texts`: their words, without the attachment framing."""
    return Quotes(_FRAMING.sub(" ", text) for text in texts)


@dataclass(frozen=True)
class DiscordFollowUp:
    """What the bot shows in Discord of the blanked texts, for it to edit (its own only)."""

    placeholder: str = ""
    # The Discord channels (threads, DMs) of the conversations whose messages were blanked.
    channels: tuple[int, ...] = ()
    # The Discord ids of the blanked members' messages: the bot's answers after them go too.
    sources: tuple[int, ...] = ()
    # (thread id, new name) of the threads named after (or quoting) a blanked text.
    renamed: tuple[tuple[int, str], ...] = ()
    # The blanked texts, to find the bot's own messages quoting them (never stored or logged:
    # left out of the repr).
    texts: tuple[str, ...] = field(default=(), repr=False)


async def answers_quoting(
    fetch: Fetch, space: str, quotes: Quotes, after: int = 0
) -> tuple[list[int], int]:
    """The space's bot answers after id `after` that quote the texts; the last id read.

    An erase reads the bulk before its transaction (`fetch` = `Database.fetchall`) and only
    the answers written since inside it: an answer written before a text cannot quote it, so
    the texts the member adds meanwhile need only the later answers.
    """
    found: list[int] = []
    last = after
    while quotes:
        rows = await fetch(
            "SELECT m.id, m.content, q.content AS asked FROM messages m "
            "LEFT JOIN messages q ON q.space_id = m.space_id AND q.id = m.reply_to "
            "WHERE m.space_id = ? AND m.id > ? AND m.role = 'assistant' "
            "AND m.erased_at IS NULL ORDER BY m.id LIMIT ?",
            (space, last, SCAN),
        )
        for row in rows:
            said, asked = str(row["content"] or ""), str(row["asked"] or "")
            if quotes.quoted_in(said, asked):
                found.append(int(row["id"]))
        if rows:
            last = int(rows[-1]["id"])
        if len(rows) < SCAN:
            break
    return found, last


@dataclass(frozen=True)
class ScannedAhead:
    """The bot's answers quoting the texts, found before the erase's (or forget's)
    transaction (up to answer id `upto`), so that the scan of the space's answers holds no
    writer."""

    found: tuple[int, ...] = ()
    upto: int = 0


async def newest_message(fetch: Fetch, space: str) -> int:
    """The space's newest message id (0: none): read before the texts an erase scans for,
    as answers stored after it may quote a text stored after the read (scanned again inside)."""
    rows = await fetch("SELECT MAX(id) AS top FROM messages WHERE space_id = ?", (space,))
    return int(next(iter(rows))["top"] or 0) if rows else 0


async def scanned_ahead(fetch: Fetch, space: str, quotes: Quotes, top: int) -> ScannedAhead:
    """The answers up to message `top` quoting the texts, read outside any transaction."""
    found, upto = await answers_quoting(fetch, space, quotes)
    return ScannedAhead(tuple(f for f in found if f <= top), min(upto, top))


async def summaries_holding(conn: Connection, space: str, message_ids: list[int]) -> set[int]:
    """The summaries that hold these messages now."""
    held: set[int] = set()
    for start in range(0, len(message_ids), 500):
        part = tuple(message_ids[start : start + 500])
        marks = ",".join("?" for _ in part)
        rows = await conn.execute_fetchall(
            f"SELECT memory_id FROM messages WHERE space_id = ? AND id IN ({marks}) "
            "AND memory_id IS NOT NULL",
            (space, *part),
        )
        held.update(int(row["memory_id"]) for row in rows)
    return held


async def retitle(
    conn: Connection, space: str, quotes: Quotes, opened: Mapping[str, str], neutral: str
) -> list[tuple[int, str]]:
    """Rename the sessions in `opened` (id → title) and those whose title quotes the texts
    (`neutral` with the name of who opened them); the renamed Discord threads."""
    rows = await conn.execute_fetchall(
        "SELECT s.id, s.title, s.discord_channel_id, (SELECT f.author_name FROM messages f "
        "WHERE f.space_id = s.space_id AND f.session_id = s.id ORDER BY f.id LIMIT 1) AS opener "
        "FROM sessions s WHERE s.space_id = ?",
        (space,),
    )
    renamed: list[tuple[int, str]] = []
    for row in rows:
        session, old = str(row["id"]), str(row["title"] or "")
        title = opened.get(session)
        if title is None and quotes.quoted_in(old):
            title = neutral.format(name=row["opener"] or "")
        if title is None or title == old:
            continue
        await conn.execute(
            "UPDATE sessions SET title = ? WHERE space_id = ? AND id = ?", (title, space, session)
        )
        if row["discord_channel_id"] is not None:
            renamed.append((int(row["discord_channel_id"]), title))
    return renamed


async def discord_places(
    conn: Connection, space: str, message_ids: list[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The Discord channels of these messages' conversations, and the messages' own Discord
    ids (the members' messages carry one)."""
    channels: set[int] = set()
    sources: set[int] = set()
    for start in range(0, len(message_ids), 500):
        part = tuple(message_ids[start : start + 500])
        marks = ",".join("?" for _ in part)
        rows = await conn.execute_fetchall(
            "SELECT m.discord_message_id, s.discord_channel_id FROM messages m JOIN sessions s "
            "ON s.space_id = m.space_id AND s.id = m.session_id "
            f"WHERE m.space_id = ? AND m.id IN ({marks})",
            (space, *part),
        )
        for row in rows:
            if row["discord_channel_id"] is not None:
                channels.add(int(row["discord_channel_id"]))
            if row["discord_message_id"] is not None:
                sources.add(int(row["discord_message_id"]))
    return tuple(sorted(channels)), tuple(sorted(sources))
