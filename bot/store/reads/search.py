"""Full-text search over messages, note pages and knowledge entries (Japanese included).

Index: SQLite FTS5 with the `trigram` tokenizer (tables and triggers in
`bot.store.schema.fulltext`). Chosen over indexing Janome tokens because:
- it needs no word boundaries, so Japanese, Chinese, mixed scripts, code, URLs and typos of
  the segmenter all match the same way: a query matches wherever its text occurs (substring
  search, like the browser's find), e.g. 「タワー」 finds 「東京タワー」, which a token index
  only finds if the segmenter cut the word there;
- the index is kept by SQL triggers alone, so every write path (repositories, imports, space
  moves, purges, cascades) keeps it in sync without running Python, and the migration builds
  it for existing rows in one statement; Janome would have to run on every write path (and
  on the event loop's thread pool) and re-tokenise the whole history when its dictionary
  changes;
- the cost is a bigger index (about 3 entries per character) and no match under 3
  characters: queries of 1–2 characters (「猫」, 「東京」) fall back to LIKE over a bounded
  window of each space's most recent rows (RECENT_WINDOW per kind), newest first.

Queries: whitespace separates terms, every term must match (AND). Each term of 3+ characters
is one quoted FTS5 phrase (quotes doubled), so FTS syntax typed by a user (`"`, `AND`, `*`,
`NEAR(`, `:`) is searched as text and never parsed; shorter terms are LIKE patterns with `%`,
`_` and `\\` escaped. Snippets come from FTS5 `snippet()` with private-use marker characters,
returned as plain text plus match offsets (never HTML).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final, Literal

from bot.store.engine.database import Database
from bot.store.engine.dialect import Row, like_pattern
from bot.store.spaces import SpaceScope, in_space

SearchKind = Literal["messages", "notes", "knowledge"]
KINDS: Final[tuple[SearchKind, ...]] = ("messages", "notes", "knowledge")
MIN_FTS_CHARS: Final = 3
RECENT_WINDOW: Final = 2000
MAX_TERMS: Final = 8
SNIPPET_TOKENS: Final = 40
LIKE_CONTEXT_CHARS: Final = 40
# Private-use characters marking a match inside snippet(); removed before returning.
OPEN: Final = "\ue000"
CLOSE: Final = "\ue001"

_CONTROL = re.compile(r"[\x00-\x1f\x7f\ue000\ue001]")


@dataclass(frozen=True)
class MatchSpan:
    """Where a match sits in a snippet: [start, end) in characters (Unicode code points)."""

    start: int
    end: int


@dataclass(frozen=True)
class Snippet:
    """A short excerpt around the match, as plain text, with the matched parts located."""

    text: str
    matches: list[MatchSpan] = field(default_factory=list)


@dataclass(frozen=True)
class SearchHit:
    """One result. Messages link to the transcript (`session_id` + `message_id`); notes and
    knowledge by `id` (knowledge also names the session it came from, when known).

    `title` is a note's or knowledge entry's title, `role` and `author` a message's; `rank` is
    FTS5's bm25 score (lower is better; 0 for LIKE hits); `created_at` is a note's last edit.
    """

    kind: SearchKind
    id: int
    space_id: str
    session_id: str | None
    message_id: int | None
    title: str | None
    role: str | None
    author: str | None
    snippet: Snippet
    created_at: str
    rank: float


@dataclass(frozen=True)
class SearchResult:
    """Hits in order (best first; newest first in `like` mode) and how they were found."""

    mode: Literal["fts", "like"]
    hits: list[SearchHit]


@dataclass(frozen=True)
class _Terms:
    long: list[str]
    short: list[str]

    @property
    def match(self) -> str:
        """The FTS5 expression: every long term as a quoted phrase (implicit AND)."""
        return " ".join('"' + term.replace('"', '""') + '"' for term in self.long)


def parse_terms(text: str) -> _Terms:
    """Split a query into FTS phrases (3+ characters) and LIKE terms (shorter)."""
    terms = _CONTROL.sub(" ", text).split()[:MAX_TERMS]
    return _Terms(
        long=[t for t in terms if len(t) >= MIN_FTS_CHARS],
        short=[t for t in terms if len(t) < MIN_FTS_CHARS],
    )


def parse_snippet(marked: str) -> Snippet:
    """A snippet() result with OPEN/CLOSE markers as plain text and match spans."""
    text: list[str] = []
    matches: list[MatchSpan] = []
    start: int | None = None
    length = 0
    for char in marked:
        if char == OPEN:
            start = length
        elif char == CLOSE:
            if start is not None and length > start:
                matches.append(MatchSpan(start, length))
            start = None
        else:
            text.append(char)
            length += 1
    return Snippet("".join(text), matches)


def like_snippet(content: str, terms: list[str]) -> Snippet:
    """An excerpt around the first occurrence of any term, every occurrence in it marked."""
    folded = content.lower()
    lowered = [term.lower() for term in terms if term]
    first = min(
        (index for term in lowered if (index := folded.find(term)) >= 0),
        default=0,
    )
    begin = max(0, first - LIKE_CONTEXT_CHARS)
    end = min(len(content), first + LIKE_CONTEXT_CHARS * 2)
    prefix = "…" if begin > 0 else ""
    suffix = "…" if end < len(content) else ""
    window = content[begin:end]
    folded_window = folded[begin:end]
    spans: list[MatchSpan] = []
    for term in lowered:
        index = folded_window.find(term)
        while index >= 0:
            spans.append(MatchSpan(len(prefix) + index, len(prefix) + index + len(term)))
            index = folded_window.find(term, index + len(term))
    merged: list[MatchSpan] = []
    for span in sorted(spans, key=lambda s: s.start):
        if merged and span.start <= merged[-1].end:
            merged[-1] = MatchSpan(merged[-1].start, max(merged[-1].end, span.end))
        else:
            merged.append(span)
    return Snippet(prefix + window + suffix, merged)


@dataclass(frozen=True)
class _Kind:
    """How one kind is searched: its table, FTS table, text columns and hit columns."""

    table: str
    fts: str
    columns: tuple[str, ...]
    select: str


_KINDS: Final[dict[SearchKind, _Kind]] = {
    "messages": _Kind(
        "messages",
        "messages_fts",
        ("content",),
        "t.id, t.space_id, t.session_id, t.id AS message_id, NULL AS title, t.role, "
        "t.author_name AS author, t.created_at",
    ),
    "notes": _Kind(
        "note_pages",
        "note_pages_fts",
        ("title", "content"),
        "t.id, t.space_id, NULL AS session_id, NULL AS message_id, t.title, NULL AS role, "
        "NULL AS author, t.updated_at AS created_at",
    ),
    "knowledge": _Kind(
        "knowledge_entries",
        "knowledge_fts",
        ("title", "query", "summary"),
        "t.id, t.space_id, t.session_id, NULL AS message_id, t.title, NULL AS role, "
        "NULL AS author, t.created_at",
    ),
}


def _short_filter(kind: _Kind, short: list[str], like: str = "LIKE") -> tuple[str, list[str]]:
    """`AND (col LIKE ? OR …)` for every term, and the patterns (`like`: ILIKE on PostgreSQL,
    whose LIKE is case-sensitive where SQLite's is not)."""
    clauses: list[str] = []
    params: list[str] = []
    for term in short:
        ors = " OR ".join(f"t.{column} {like} ? ESCAPE '\\'" for column in kind.columns)
        clauses.append(f" AND ({ors})")
        params.extend([like_pattern(term)] * len(kind.columns))
    return "".join(clauses), params


def _hit(kind: SearchKind, row: Row, snippet: Snippet, rank: float) -> SearchHit:
    return SearchHit(
        kind=kind,
        id=row["id"],
        space_id=row["space_id"],
        session_id=row["session_id"],
        message_id=row["message_id"],
        title=row["title"],
        role=row["role"],
        author=row["author"],
        snippet=snippet,
        created_at=row["created_at"],
        rank=rank,
    )


# Ranked hits in one total order, the same in SQL (each kind's LIMIT) and in the merge below:
# with ties left to the engine, a page's LIMIT and the merge disagreed and pages overlapped.
HIT_ORDER: Final = "rank, created_at, t.id"


class SearchRepository:
    """Runs searches over the FTS indexes (see the module docstring for the rules)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def search(
        self,
        scope: SpaceScope,
        text: str,
        kinds: tuple[SearchKind, ...] = KINDS,
        *,
        limit: int = 20,
        offset: int = 0,
    ) -> SearchResult:
        """Hits for `text` in `scope` (one space, or ALL_SPACES), `limit` from `offset` on."""
        terms = parse_terms(text)
        if not terms.long and not terms.short:
            return SearchResult("fts", [])
        wanted = limit + offset
        hits: list[SearchHit] = []
        for kind in kinds:
            if terms.long and self._db.dialect == "postgresql":
                hits += await self._trigram(scope, kind, terms, wanted)
            elif terms.long:
                hits += await self._fts(scope, kind, terms, wanted)
            else:
                hits += await self._like(scope, kind, terms.short, wanted)
        if terms.long:
            hits.sort(key=lambda hit: (hit.rank, hit.created_at, hit.id))
            mode: Literal["fts", "like"] = "fts"
        else:
            hits.sort(key=lambda hit: hit.created_at, reverse=True)
            mode = "like"
        return SearchResult(mode, hits[offset:wanted])

    async def _fts(
        self, scope: SpaceScope, name: SearchKind, terms: _Terms, limit: int
    ) -> list[SearchHit]:
        kind = _KINDS[name]
        where, params = in_space(scope, "t.space_id")
        short_sql, short_params = _short_filter(kind, terms.short)
        rows = await self._db.fetchall(
            f"SELECT {kind.select}, snippet({kind.fts}, -1, ?, ?, '…', {SNIPPET_TOKENS}) "
            f"AS marked, {kind.fts}.rank AS rank "
            f"FROM {kind.fts} JOIN {kind.table} t ON t.id = {kind.fts}.rowid "
            f"WHERE {kind.fts} MATCH ? AND {where}{short_sql} ORDER BY {HIT_ORDER} LIMIT ?",
            (OPEN, CLOSE, terms.match, *params, *short_params, limit),
        )
        return [_hit(name, row, parse_snippet(row["marked"]), float(row["rank"])) for row in rows]

    async def _trigram(
        self, scope: SpaceScope, name: SearchKind, terms: _Terms, limit: int
    ) -> list[SearchHit]:
        """PostgreSQL: every term as an ILIKE substring (served by the pg_trgm GIN indexes),
        ranked by trigram similarity (negated, so lower is better as with bm25)."""
        kind = _KINDS[name]
        where, params = in_space(scope, "t.space_id")
        all_terms = [*terms.long, *terms.short]
        term_sql, term_params = _short_filter(kind, all_terms, "ILIKE")
        text_columns = ", ".join(f"t.{column}" for column in kind.columns)
        document = " || ' ' || ".join(f"t.{column}" for column in kind.columns)
        rows = await self._db.fetchall(
            f"SELECT {kind.select}, {text_columns}, -similarity({document}, ?) AS rank "
            f"FROM {kind.table} t WHERE {where}{term_sql} ORDER BY {HIT_ORDER} LIMIT ?",
            (" ".join(terms.long), *params, *term_params, limit),
        )
        return [
            _hit(name, row, _matched_snippet(row, kind, all_terms), float(row["rank"]))
            for row in rows
        ]

    async def _like(
        self, scope: SpaceScope, name: SearchKind, short: list[str], limit: int
    ) -> list[SearchHit]:
        kind = _KINDS[name]
        where, params = in_space(scope)
        like = "ILIKE" if self._db.dialect == "postgresql" else "LIKE"
        short_sql, short_params = _short_filter(kind, short, like)
        text_columns = ", ".join(f"t.{column}" for column in kind.columns)
        rows = await self._db.fetchall(
            f"SELECT {kind.select}, {text_columns} FROM "
            f"(SELECT * FROM {kind.table} WHERE {where} ORDER BY id DESC LIMIT ?) t "
            f"WHERE TRUE{short_sql} ORDER BY t.id DESC LIMIT ?",
            (*params, RECENT_WINDOW, *short_params, limit),
        )
        return [_hit(name, row, _matched_snippet(row, kind, short), 0.0) for row in rows]


def _matched_snippet(row: Row, kind: _Kind, terms: list[str]) -> Snippet:
    """A snippet from the last text column that holds a term (the body before the title)."""
    texts = [str(row[column] or "") for column in kind.columns]
    matched = next(
        (t for t in reversed(texts) if any(s.lower() in t.lower() for s in terms)),
        texts[-1],
    )
    return like_snippet(matched, terms)
