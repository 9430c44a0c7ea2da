"""Recall over a space's past conversations: the search behind the `recall` tool, the few
relevant hits of the other conversations behind the related-memories layer, and how a hit
reads to the model (the same for both).

The ranking is lexical (`bot.store.reads.recall`: the trigram full-text list fused with the
background term index's). With an embedding model configured, the recall tool's search fuses
a third list, the space's messages nearest to the query by embedding
(`bot.memory.recall_embed.SemanticRecall`: one embedding call per search). The related-memories
layer, read on every turn, stays lexical: no embedding call on a turn's hot path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from bot.memory.recall_embed import CANDIDATES as EMBED_CANDIDATES
from bot.memory.recall_embed import SemanticRecall
from bot.prompts import Prompts
from bot.store.reads.recall import FUSE_CANDIDATES, WORD_CANDIDATES, RecallRepository
from bot.store.reads.recall_hits import Exclude, RecallHit, RecallLine
from bot.store.reads.recall_neighbours import SPREAD_SOURCES
from bot.store.reads.recall_rank import Terms, is_relevant
from bot.utils.zones import zone_or_none

# The tool ranks every candidate the fusion can hold (its lexical, term-index and embedding
# lists and the neighbours their best lift), so that every match it found can be paged.
MAX_RESULTS: Final = FUSE_CANDIDATES + WORD_CANDIDATES + EMBED_CANDIDATES + 2 * SPREAD_SOURCES
# Related memories: at most this many hits join the context, chosen among this many candidates.
RELATED_LIMIT: Final = 3
RELATED_CANDIDATES: Final = 20
# One line per message; long messages are cut so that a hit block always fits one page.
HIT_CHARS: Final = 1500
NEIGHBOUR_CHARS: Final = 300
HIT_MARK: Final = "> "
LINE_INDENT: Final = "  "


ZoneOf = Callable[[str], Awaitable[str | None]]


@dataclass(frozen=True)
class RecallPage:
    """Matches `offset`… of a query (with their neighbours), out of `total` matches;
    `zone`: the space's own time zone (None: UTC only); `capped`: more messages may match
    than the `total` the bounded candidate reads let recall rank."""

    terms: Terms
    total: int
    offset: int
    hits: list[RecallHit]
    zone: str | None = None
    capped: bool = False


class RecallService:
    """Recall in one space: searches for the tool, relevant hits for the layer."""

    def __init__(
        self,
        reads: RecallRepository,
        semantic: SemanticRecall | None = None,
        zone_of: ZoneOf | None = None,
    ) -> None:
        self._reads = reads
        self._semantic = semantic
        self._zone_of = zone_of

    async def search(self, space: str, query: str, *, offset: int = 0, count: int) -> RecallPage:
        """Up to `count` matches from rank `offset` on, with context. A message ranked only
        as a match's neighbour is no match: it shows among that match's context lines."""
        nearest = await self._semantic.ranking(space, query) if self._semantic else []
        ranked = await self._reads.ranked(space, query, limit=MAX_RESULTS, nearest=nearest)
        matches = [hit for hit in ranked.hits if not hit.lifted]
        page = matches[offset : offset + count]
        hits = await self._reads.with_context(space, page)
        zone = await self._zone_of(space) if self._zone_of and hits else None
        return RecallPage(ranked.terms, len(matches), offset, hits, zone, ranked.capped)

    async def related(
        self,
        space: str,
        text: str,
        session_id: str,
        channel_id: int | None = None,
        *,
        limit: int = RELATED_LIMIT,
    ) -> tuple[Terms, list[RecallHit]]:
        """The best hits of the space's other threads that pass the relevance threshold (the
        session's own thread left out: this session and the others of its Discord channel)."""
        ranked = await self._reads.ranked(
            space,
            text,
            limit=RELATED_CANDIDATES,
            exclude=Exclude(session_id, channel_id),
            newest=True,  # on every turn: a cost that does not grow with the history
            neighbours=False,  # only hits holding the message's words are kept
        )
        relevant = [hit for hit in ranked.hits if is_relevant(hit.matched, ranked.terms)]
        return ranked.terms, await self._reads.with_context(space, relevant[:limit])


def normalize_query(query: str, limit: int) -> str:
    """A query on one line, at most `limit` characters."""
    return " ".join(str(query or "").split())[:limit].strip()


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True)
class RecallLabels:
    """The language-dependent words of a hit (bot/prompts/<language>.json)."""

    bot: str
    summary: str
    untitled: str
    someone: str

    @classmethod
    def of(cls, prompts: Prompts) -> RecallLabels:
        """The labels of `prompts`' language."""
        return cls(
            bot=prompts["recall_bot"],
            summary=prompts["recall_summary"],
            untitled=prompts["recall_untitled"],
            someone=prompts["recall_someone"],
        )

    def speaker(self, role: str | None, author: str | None) -> str:
        """Who said a line: the member's display name, or the bot."""
        if role == "assistant":
            return self.bot
        return author or self.someone


def _line(line: RecallLine, labels: RecallLabels) -> str:
    who = labels.speaker(line.role, line.author_name)
    return f"{LINE_INDENT}{who}: {_one_line(line.content, NEIGHBOUR_CHARS)}"


def said_at(created_at: str, zone: str | None = None) -> str:
    """`2026-12-07 14:05 UTC`, then the time in `zone` when given (`(23:05 Asia/Tokyo)`,
    its date too when that differs); the stored text as it is when it is no timestamp."""
    try:
        moment = datetime.fromisoformat(created_at)
    except ValueError:
        return created_at
    utc = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    text = f"{utc:%Y-%m-%d %H:%M} UTC"
    known = zone_or_none(zone) if zone != "UTC" else None
    if known is None:
        return text  # no zone, or one this host does not know: UTC alone, never a failed recall
    local = utc.astimezone(known)
    shown = f"{local:%H:%M}" if local.date() == utc.date() else f"{local:%Y-%m-%d %H:%M}"
    return f"{text} ({shown} {zone})"


def hit_heading(
    hit: RecallHit, labels: RecallLabels, number: int | None = None, zone: str | None = None
) -> str:
    """`[n] who · when · in "title" · link`: who said it, when (UTC, and in the space's
    `zone`) and where."""
    who = labels.summary if hit.kind == "summary" else labels.speaker(hit.role, hit.author_name)
    title = hit.session_title.strip() or labels.untitled
    parts = [who, said_at(hit.created_at, zone), f'in "{_one_line(title, 100)}"']
    if hit.jump_url is not None:
        parts.append(hit.jump_url)
    prefix = f"[{number}] " if number is not None else ""
    return prefix + " · ".join(parts)


def hit_lines(hit: RecallHit, labels: RecallLabels) -> str:
    """The neighbouring lines and the hit's own line, marked with HIT_MARK."""
    if hit.kind == "summary":
        return HIT_MARK + _one_line(hit.content, HIT_CHARS)
    who = labels.speaker(hit.role, hit.author_name)
    lines = [_line(line, labels) for line in hit.before]
    lines.append(f"{HIT_MARK}{who}: {_one_line(hit.content, HIT_CHARS)}")
    lines += [_line(line, labels) for line in hit.after]
    return "\n".join(lines)


def render_hit(
    hit: RecallHit, labels: RecallLabels, number: int | None = None, zone: str | None = None
) -> str:
    """A hit as the model reads it: its heading, then its lines."""
    return f"{hit_heading(hit, labels, number, zone)}\n{hit_lines(hit, labels)}"
