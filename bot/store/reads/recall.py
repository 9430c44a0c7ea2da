"""Recall: the messages and summaries of one space that match a query, ranked, with context.

Searches every session of the space — threads, DMs, imported sessions, archived (summarised)
messages alike — and the space's live summaries (`memories`). Terms, ranking and the
relevance rule are in `bot.store.reads.recall_rank`.

Bounded on every engine, never a scan of the history:
- terms of 3+ characters: the full-text index (SQLite FTS5 trigram `messages_fts`, the terms
  as quoted phrases OR-ed, best FTS_CANDIDATES by bm25; PostgreSQL: the pg_trgm GIN index
  serving ILIKE, OR-ed, the same bm25 computed in Python, `recall_postgres`);
- shorter terms (東京, 猫): LIKE over the space's RECENT_WINDOW most recent messages, as
  `bot.store.reads.search` does;
- summaries (no full-text index): LIKE over the space's SUMMARY_WINDOW newest live summaries.
Then the union is ranked in Python and the hits kept get CONTEXT_LINES neighbouring messages
on each side (same session, by id).

`ranked` fuses that lexical list (reciprocal rank fusion, `recall_rank.fuse`) with a second
one from the term index `recall_terms` (filled in the background: Janome words, English stems,
the speaker's name, the date; see `bot.store.reads.recall_words`): SQLite FTS5 `unicode61`
ranked by bm25, PostgreSQL the lexeme GIN index and the same bm25; best WORD_CANDIDATES, newest
first on ties (both engines return the same hits in the same order); fused with FUSE_K and
FUSE_WEIGHTS. A hit's `matched` then also holds the terms it matched through its words
(`moving` in a message saying `moved`, a speaker's name).
The match holds only the query's uncommon words (`recall_words.common_words`: each word's
messages counted up to COMMON_WORD_DOCS, the rest kept rarest first within WORD_ROWS_BUDGET
rows): a speaker's name or a year in most rows would have the engine score all of them. Those
words still count, after the match: candidates holding more query terms move up.
After the fusion, the best candidates lift the messages just before and after them in their
session (`recall_neighbours`): an answer that repeats none of the question's words joins the
ranking, below the message that lifted it. Last, when the query names a speaker of the
candidates, what that person said counts ×1.3 (`recall_rank.lift_speakers`).
With an embedding model, the recall tool adds a third list to that fusion: the space's messages
nearest to the query by embedding (`nearest`, from `bot.memory.recall_embed`).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Coroutine, Sequence
from dataclasses import replace
from typing import Any, Final

from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.engine.pinned import Reads
from bot.store.reads.recall_hits import (
    MESSAGE_COLUMNS,
    SESSION_JOIN,
    SESSION_TITLE,
    Exclude,
    RecallHit,
    RecallResult,
    any_like,
    excluding,
    line_of,
    message_hit,
    summary_hit,
    union,
)
from bot.store.reads.recall_neighbours import (
    SPREAD_SHARE,
    SPREAD_SOURCES,
    neighbour_ids,
)
from bot.store.reads.recall_postgres import PostgresRecall
from bot.store.reads.recall_rank import (
    Terms,
    best_first,
    fuse_scores,
    lexical_order,
    lift_speakers,
    matched_terms,
    named_speakers,
    parse_terms,
    spread,
)
from bot.store.reads.recall_words import (
    common_words,
    fts_words,
    matched_words,
    query_words,
    term_weights,
    tsquery_words,
)
from bot.store.schema.fulltext import SEARCHABLE, words_tsvector

FTS_CANDIDATES: Final = 200
# Newest first (`ranked(newest=True)`), no engine score to rank by: the list the fusion keeps.
# The related layer keeps 3 of them: 100 cost it ~0.7 ms more per turn (bench/context.py).
NEWEST_CANDIDATES: Final = 50
# SQLite: a long term in this many messages or more is left out of the ranked text match, the
# rest kept rarest first within TRIGRAM_ROWS_BUDGET rows: FTS5 computes bm25 for every
# matching row before its LIMIT (≈ 15 µs a row; a chatter word in 4% of 1M rows cost 600 ms).
TRIGRAM_COMMON_DOCS: Final = 1000
TRIGRAM_ROWS_BUDGET: Final = 1000
RECENT_WINDOW: Final = 2000
SUMMARY_WINDOW: Final = 500
# Fused: the best FUSE_CANDIDATES of the lexical list with the best WORD_CANDIDATES of the
# term index (a read returns at most 30 hits; 100 lexical ones keep R@10 0.53, 50 give 0.47).
FUSE_CANDIDATES: Final = 100
WORD_CANDIDATES: Final = 100
# A query word in this many indexed messages or more is left out of the term index's match
# (`recall_words.common_words`): scoring its rows made the read 25x slower at 100k messages.
COMMON_WORD_DOCS: Final = 500
WORDS_INDEX: Final = next(s.trigram_indexes[0] for s in SEARCHABLE if s.table == "recall_terms")
# The rows one match may score, rarest words first (the rarest kept whatever its count).
WORD_ROWS_BUDGET: Final = 200
# Fusing the trigram list with the term index's: the term index counts twice, and a small k
# lets a first place stand out (bench/recall.py: R@10 0.40 with k=60 unweighted, 0.50 so).
FUSE_K: Final = 10
FUSE_WEIGHTS: Final = (1.0, 2.0)
# The embedding list's weight in that fusion, when the recall tool has one.
EMBED_WEIGHT: Final = 1.0
CONTEXT_LINES: Final = 2


def _fts_order(table: str, *, newest: bool) -> tuple[str, str]:
    """The score column and ORDER BY of an FTS5 read: bm25 rank, or the newest rows (the
    index walks them newest first and stops at the LIMIT; no score to compute)."""
    if newest:
        return "0.0", f"{table}.rowid DESC"
    return f"{table}.rank", f"{table}.rank, m.id DESC"


async def _none() -> list[RecallHit]:
    return []


async def _in_turn(dialect: str, *reads: Coroutine[Any, Any, Any]) -> list[Any]:
    """The results of `reads`, in order: issued together on SQLite (they share a trip to the
    reader, `bot.store.engine.read_batch`), one after another on PostgreSQL (recall's reads
    there are pinned to one connection, which serves one statement at a time)."""
    if dialect == "sqlite":
        return list(await asyncio.gather(*reads))
    results: list[Any] = []
    try:
        for read in reads:
            results.append(await read)
    finally:
        for unread in reads[len(results) + 1 :]:
            unread.close()
    return results


class RecallRepository:
    """Recall reads over one space's past conversations (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self._db: Reads = db
        self._pinnable: Database | None = db
        self._pg = PostgresRecall(db)

    def _over(self, reads: Reads) -> RecallRepository:
        """These reads through `reads` (`Database.pinned_reads`), remembering the same."""
        view = copy.copy(self)
        view._db, view._pinnable, view._pg = reads, None, self._pg.over(reads)
        return view

    @property
    def _like(self) -> str:
        # PostgreSQL's LIKE is case-sensitive where SQLite's is not.
        return "ILIKE" if self._db.dialect == "postgresql" else "LIKE"

    async def recall(
        self,
        space: str,
        query: str,
        *,
        limit: int = 10,
        exclude: Exclude | None = None,
        context_lines: int = CONTEXT_LINES,
    ) -> RecallResult:
        """The best `limit` hits for `query` in `space`, each with its neighbouring lines."""
        result = await self.ranked(space, query, limit=limit, exclude=exclude)
        hits = await self.with_context(space, result.hits, context_lines)
        return RecallResult(result.terms, hits)

    async def lexical(
        self,
        space: str,
        query: str,
        *,
        limit: int,
        exclude: Exclude | None = None,
        newest: bool = False,
    ) -> RecallResult:
        """The lexical ranking alone (no neighbours): the list a later ranking fuses with.
        `exclude` leaves a thread out (see `Exclude`); `newest`: see `ranked`."""
        terms = parse_terms(query)
        if not terms.all or limit <= 0:
            return RecallResult(terms, [])
        indexed, recent, summaries = await _in_turn(
            self._db.dialect,
            self._indexed(space, terms, exclude, newest=newest) if terms.long else _none(),
            self._recent(space, terms, exclude) if terms.short else _none(),
            self._summaries(space, terms, exclude, newest=newest),
        )
        found: dict[tuple[str, int], RecallHit] = {}
        for hit in indexed:
            found[(hit.kind, hit.id)] = hit
        for hit in recent:
            found.setdefault((hit.kind, hit.id), hit)
        for hit in summaries:
            found[(hit.kind, hit.id)] = hit
        ranked = lexical_order(hit for hit in found.values() if hit.matched)
        full = len(indexed) >= (NEWEST_CANDIDATES if newest else FTS_CANDIDATES)
        capped = full or len(recent) >= FTS_CANDIDATES or len(ranked) > limit
        return RecallResult(terms, ranked[:limit], capped)

    async def ranked(
        self,
        space: str,
        query: str,
        *,
        limit: int,
        exclude: Exclude | None = None,
        newest: bool = False,
        nearest: Sequence[int] = (),
        neighbours: bool = True,
    ) -> RecallResult:
        """The lexical list fused with the term index's, neighbours of strong hits moved up
        (see the module docstring and `recall_neighbours`). With `newest` (SQLite), each
        full-text list takes the newest matching messages instead of the best by bm25 (which
        scores every match: a cost in proportion to the history), for the related memories read
        on every turn; the terms they hold still order them. `nearest`: message ids of the
        space by embedding similarity, best first (`bot.memory.recall_embed`), a third list
        fused with EMBED_WEIGHT (ids of another space or hidden are never read). Without
        `neighbours` none is lifted (two reads fewer), for a caller that keeps only hits holding
        the query's words: a lift alone never makes a hit one."""
        if self._pinnable is not None and self._db.dialect == "postgresql":
            async with self._pinnable.pinned_reads() as reads:
                return await self._over(reads).ranked(
                    space,
                    query,
                    limit=limit,
                    exclude=exclude,
                    newest=newest,
                    nearest=nearest,
                    neighbours=neighbours,
                )
        # The term index's read needs only the parsed terms, not the lexical list.
        lexical, word_rows = await _in_turn(
            self._db.dialect,
            self.lexical(space, query, limit=FUSE_CANDIDATES, exclude=exclude, newest=newest),
            self._words(space, parse_terms(query), exclude, newest=newest),
        )
        if limit <= 0 or not (lexical.terms.all or nearest):
            return RecallResult(lexical.terms, [])
        words: dict[tuple[str, int], tuple[Row, tuple[str, ...]]] = {
            ("message", int(row["id"])): (row, also) for row, also in word_rows
        }
        found: dict[tuple[str, int], RecallHit] = {(h.kind, h.id): h for h in lexical.hits}
        near = [("message", int(n)) for n in nearest]
        scores = fuse_scores(
            [list(found), list(words), near], FUSE_K, (*FUSE_WEIGHTS, EMBED_WEIGHT)
        )
        if neighbours:
            scores = await self._lift_neighbours(space, scores)
        known = {key: hit.author_name for key, hit in found.items()}
        known |= {key: word[0]["author_name"] for key, word in words.items()}
        named = named_speakers(lexical.terms, known.values())
        # Only the kept hits' new rows are read, as before: a neighbour outside them whose
        # author is not known yet is not lifted, and so stays outside (a lift only raises).
        new = [key for key in best_first(scores)[:limit] if key not in known]
        extra = await self._rows(space, [key[1] for key in new])
        known |= {("message", n): row["author_name"] for n, row in extra.items()}
        order = best_first(lift_speakers(scores, known, named))[:limit]
        hits = _mark_lifted(self._hits(order, found, words, extra, lexical.terms), nearest)
        return RecallResult(lexical.terms, hits, lexical.capped or len(words) >= WORD_CANDIDATES)

    async def _lift_neighbours(
        self, space: str, scores: dict[tuple[str, int], float]
    ) -> dict[tuple[str, int], float]:
        """`scores` with the messages next to the strongest hits lifted (`spread`)."""
        sources = [key for key in best_first(scores) if key[0] == "message"][:SPREAD_SOURCES]
        around = await neighbour_ids(self._db, space, [key[1] for key in sources])
        return spread(
            scores,
            {("message", n): [("message", m) for m in ids] for n, ids in around.items()},
            SPREAD_SHARE,
        )

    async def _rows(self, space: str, ids: list[int]) -> dict[int, Row]:
        """The visible messages of `ids` in `space`, with their session's columns, by id."""
        if not ids:
            return {}
        marks = ", ".join("?" for _ in ids)
        rows = await self._db.fetchall(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m {SESSION_JOIN} "
            f"WHERE m.space_id = ? AND m.recall_hidden = 0 AND m.id IN ({marks})",
            (space, *ids),
        )
        return {int(row["id"]): row for row in rows}

    @staticmethod
    def _hits(
        order: list[tuple[str, int]],
        found: dict[tuple[str, int], RecallHit],
        words: dict[tuple[str, int], tuple[Row, tuple[str, ...]]],
        extra: dict[int, Row],
        terms: Terms,
    ) -> list[RecallHit]:
        """The hits of `order`, built only now with the terms their words matched too."""
        hits = []
        for key in order:
            hit, word = found.get(key), words.get(key)
            if word is not None and hit is None:
                hit = message_hit(word[0], terms, float(word[0]["score"]), word[1])
            elif word is not None and hit is not None and word[1]:
                hit = replace(hit, matched=union(hit.matched, word[1]))
            elif hit is None and key[1] in extra:
                hit = message_hit(extra[key[1]], terms, 0.0)
            if hit is not None:
                hits.append(hit)
        return hits

    async def _words(
        self, space: str, terms: Terms, exclude: Exclude | None, *, newest: bool = False
    ) -> list[tuple[Row, tuple[str, ...]]]:
        """Messages whose index words hold any of the query's uncommon words, each with the
        query terms its index words hold: best first (bm25 / ts_rank), then those holding
        more query terms — the common words left out of the match (`common_words`: a
        speaker's name, a year) included — moved up."""
        wanted = query_words(terms)
        words = list(dict.fromkeys(word for found in wanted.values() for word in found))
        if not words:
            return []
        counts = await self._word_counts(words)
        kept, _common = common_words(counts, COMMON_WORD_DOCS, WORD_ROWS_BUDGET)
        if not kept:
            return []
        rows = await self._word_rows(space, kept, counts, exclude, newest=newest)
        found = [(row, matched_words(row["index_terms"], wanted)) for row in rows]
        weights = term_weights(wanted, counts, COMMON_WORD_DOCS)
        # A stable sort: the query terms held (in the words or the text), each weighted by its
        # rarity (`term_weights`), first; else the engine's order.
        return sorted(
            found,
            key=lambda item: (
                -sum(
                    weights.get(term, 0.0)
                    for term in union(item[1], matched_terms(item[0]["content"], terms))
                )
            ),
        )

    async def _word_counts(self, words: list[str]) -> dict[str, int]:
        """Each word's number of indexed messages (all spaces), counted up to COMMON_WORD_DOCS
        only: a bounded read however common the word (an `fts5vocab` row count would walk
        the word's whole posting list). PostgreSQL: a word its statistics already call common
        is not counted (`_common_by_statistics`)."""
        known: dict[str, int] = {}
        if self._db.dialect == "postgresql":
            known = await self._common_by_statistics(words)
            words = [word for word in words if word not in known]
            if not words:
                return known
            vector = words_tsvector("r.terms")
            count = (
                f"SELECT COUNT(*) FROM (SELECT 1 FROM recall_terms r "
                f"WHERE {vector} @@ CAST(? AS tsquery) LIMIT ?) c"
            )
            match = [tsquery_words([word]) for word in words]
        else:
            count = (
                "SELECT COUNT(*) FROM (SELECT 1 FROM recall_terms_fts "
                "WHERE recall_terms_fts MATCH ? LIMIT ?)"
            )
            match = [fts_words([word]) for word in words]
        sql = " UNION ALL ".join(f"SELECT {n} AS n, ({count}) AS docs" for n in range(len(words)))
        params = [value for query in match for value in (query, COMMON_WORD_DOCS)]
        rows = await self._db.fetchall(sql, params, indexes_only=True)
        docs = {int(row["n"]): int(row["docs"]) for row in rows}
        return known | {word: docs.get(n, 0) for n, word in enumerate(words)}

    async def _common_by_statistics(self, words: list[str]) -> dict[str, int]:
        """PostgreSQL: the words that ANALYZE's sample of the term index puts in
        COMMON_WORD_DOCS rows or more, with that estimate. The GIN index builds a word's whole
        bitmap even to count it up to a limit (≈ 10 ms for a name in a quarter of 1M rows),
        and a scan that stops at the limit runs through the table for a rare word."""
        shares, total = await self._word_shares()
        guesses = {word: int(shares.get(word, 0.0) * total) for word in words}
        return {word: docs for word, docs in guesses.items() if docs >= COMMON_WORD_DOCS}

    async def _word_shares(self) -> tuple[dict[str, float], float]:
        """PostgreSQL: the term index's most common words with the share of rows holding
        each (ANALYZE's sample; empty before one), and its row count."""
        found = await self._pg.statistics(WORDS_INDEX)
        return found.shares, found.total

    async def _word_rows(
        self,
        space: str,
        words: list[str],
        counts: dict[str, int],
        exclude: Exclude | None,
        *,
        newest: bool = False,
    ) -> list[Row]:
        """The best (or `newest`) WORD_CANDIDATES messages of `space` holding any of `words`
        (`counts`: each word's indexed messages, for PostgreSQL's bm25)."""
        skip, skip_params = excluding(exclude, "m.session_id")
        select = f"SELECT {MESSAGE_COLUMNS}, r.terms AS index_terms"
        joins = f"JOIN messages m ON m.id = r.id {SESSION_JOIN}"
        visible = f"m.space_id = ? AND m.recall_hidden = 0{skip}"
        if self._db.dialect == "postgresql":
            return await self._pg.word_rows(
                space, words, counts, exclude, newest=newest, limit=WORD_CANDIDATES
            )
        score, order = _fts_order("recall_terms_fts", newest=newest)
        return await self._db.fetchall(
            f"{select}, {score} AS score FROM recall_terms_fts "
            f"JOIN recall_terms r ON r.id = recall_terms_fts.rowid {joins} "
            f"WHERE recall_terms_fts MATCH ? AND r.space_id = ? AND {visible} "
            f"ORDER BY {order} LIMIT ?",
            (fts_words(words), space, space, *skip_params, WORD_CANDIDATES),
        )

    async def _indexed(
        self, space: str, terms: Terms, exclude: Exclude | None, *, newest: bool = False
    ) -> list[RecallHit]:
        """Messages holding any long term, through the engine's full-text index: the terms in
        fewer than TRIGRAM_COMMON_DOCS messages (rarest first, within TRIGRAM_ROWS_BUDGET)
        ranked by bm25; when every term is that common, the newest rows holding them all.
        Ranking scores every matching row, so a common term made the tail slow. With
        `newest` nothing is scored: the newest rows holding any term, so no counts are needed.
        PostgreSQL: the same, bm25 computed in Python (`recall_postgres`)."""
        if newest:
            counts = {term: 0 for term in terms.long}
        elif self._db.dialect == "postgresql":
            shares, total = await self._word_shares()
            counts = await self._pg.term_counts_all_spaces(
                terms.long,
                TRIGRAM_COMMON_DOCS,
                {word: int(share * total) for word, share in shares.items()},
                (await self._pg.statistics(WORDS_INDEX)).authors,
            )
        else:
            counts = await self._term_counts(terms.long)
        kept = (
            list(terms.long)
            if newest
            else common_words(counts, TRIGRAM_COMMON_DOCS, TRIGRAM_ROWS_BUDGET)[0]
        )
        ranked = bool(kept)
        match = Terms(tuple(kept)) if kept else Terms(terms.long)
        limit = NEWEST_CANDIDATES if newest else FTS_CANDIDATES
        if self._db.dialect == "postgresql":
            if newest:
                rows = await self._pg.newest_rows(space, match.long, exclude, limit)
            else:
                rows = await self._pg.trigram_rows(
                    space, match.long, counts, exclude, every=not ranked, limit=limit
                )
            return [message_hit(row, terms, float(row["score"])) for row in rows]
        skip, skip_params = excluding(exclude, "m.session_id")
        if ranked or newest:
            score, order = _fts_order("messages_fts", newest=newest)
        else:  # every term common: the newest rows holding them all, bm25 for those only
            score, order = "messages_fts.rank", "messages_fts.rowid DESC"
        rows = await self._db.fetchall(
            f"SELECT {MESSAGE_COLUMNS}, {score} AS score "
            f"FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid {SESSION_JOIN} "
            f"WHERE messages_fts MATCH ? AND m.space_id = ? AND m.recall_hidden = 0{skip} "
            f"ORDER BY {order} LIMIT ?",
            (match.fts_match if ranked else match.fts_match_all, space, *skip_params, limit),
        )
        return [message_hit(row, terms, float(row["score"])) for row in rows]

    async def _term_counts(self, terms: tuple[str, ...]) -> dict[str, int]:
        """SQLite: each long term's number of matching messages (all spaces), counted up to
        TRIGRAM_COMMON_DOCS only (a bounded read, as `_word_counts`)."""
        count = (
            "SELECT COUNT(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)"
        )
        match = [Terms((term,)).fts_match for term in terms]
        sql = " UNION ALL ".join(f"SELECT {n} AS n, ({count}) AS docs" for n in range(len(terms)))
        params = [value for query in match for value in (query, TRIGRAM_COMMON_DOCS)]
        rows = await self._db.fetchall(sql, params)
        docs = {int(row["n"]): int(row["docs"]) for row in rows}
        return {term: docs.get(n, 0) for n, term in enumerate(terms)}

    async def _recent(self, space: str, terms: Terms, exclude: Exclude | None) -> list[RecallHit]:
        """Messages holding any short term among the space's RECENT_WINDOW newest (the
        excluded session's own left out of the window)."""
        inner, inner_params = exclude.inner("session_id") if exclude else ("", [])
        outer, outer_params = exclude.outer() if exclude else ("", [])
        clause, patterns = any_like("m.content", terms.short, self._like)
        rows = await self._db.fetchall(
            f"SELECT {MESSAGE_COLUMNS} FROM (SELECT * FROM messages WHERE space_id = ? "
            f"AND recall_hidden = 0{inner} "
            f"ORDER BY id DESC LIMIT ?) m {SESSION_JOIN} WHERE {clause}{outer} "
            "ORDER BY m.id DESC LIMIT ?",
            (space, *inner_params, RECENT_WINDOW, *patterns, *outer_params, FTS_CANDIDATES),
        )
        return [message_hit(row, terms, 0.0) for row in rows]

    async def _summaries(
        self, space: str, terms: Terms, exclude: Exclude | None, *, newest: bool = False
    ) -> list[RecallHit]:
        """Live summaries holding any term among the space's SUMMARY_WINDOW newest (with
        `newest`, the excluded thread's own taken out after the window, not before: a long
        thread's summaries are not all skipped over on every turn)."""
        inner, inner_params = exclude.inner("session_id") if exclude else ("", [])
        outer, outer_params = exclude.outer() if exclude else ("", [])
        if newest and exclude is not None:
            inner, inner_params = "", []
            outer, outer_params = excluding(exclude, "m.session_id")
        clause, patterns = any_like("m.summary", terms.all, self._like)
        rows = await self._db.fetchall(
            f"SELECT m.id, m.session_id, m.summary, m.created_at, {SESSION_TITLE}, "
            "s.discord_guild_id, s.discord_channel_id FROM (SELECT * FROM memories "
            f"WHERE space_id = ? AND condensed_into IS NULL{inner} ORDER BY id DESC LIMIT ?) m "
            f"{SESSION_JOIN} "
            f"WHERE {clause}{outer} ORDER BY m.id DESC",
            (space, *inner_params, SUMMARY_WINDOW, *patterns, *outer_params),
        )
        return [summary_hit(row, terms) for row in rows]

    async def with_context(
        self, space: str, hits: list[RecallHit], lines: int = CONTEXT_LINES
    ) -> list[RecallHit]:
        """`hits` with up to `lines` messages before and after each message hit (one read for
        all of them: a round trip each was a tenth of the read on PostgreSQL)."""
        wanted = [hit for hit in hits if hit.kind == "message"]
        if lines <= 0 or not wanted:
            return list(hits)
        columns = "id, role, author_name, content, created_at"
        side = (
            "SELECT * FROM (SELECT {n} AS hit, {columns} FROM messages WHERE space_id = ? "
            "AND session_id = ? AND recall_hidden = 0 AND id {op} ? ORDER BY id {order} "
            "LIMIT ?) {alias}{n}"
        )
        parts, params = [], []
        for n, hit in enumerate(wanted):
            for op, order, alias in (("<", "DESC", "b"), (">", "ASC", "a")):
                parts.append(side.format(n=n, columns=columns, op=op, order=order, alias=alias))
                params += [space, hit.session_id, hit.id, lines]
        rows = await self._db.fetchall(" UNION ALL ".join(parts), params)
        around: dict[int, list[Row]] = {}
        for row in rows:
            around.setdefault(wanted[int(row["hit"])].id, []).append(row)
        return [
            _with_lines(hit, around.get(hit.id, [])) if hit.kind == "message" else hit
            for hit in hits
        ]


def _mark_lifted(hits: list[RecallHit], nearest: Sequence[int]) -> list[RecallHit]:
    """`hits`, those holding no query term and not found by embedding marked `lifted`: only
    a neighbour's lift put them in the ranking."""
    near = frozenset(nearest)
    return [
        replace(hit, lifted=True)
        if hit.kind == "message" and not hit.matched and hit.id not in near
        else hit
        for hit in hits
    ]


def _with_lines(hit: RecallHit, rows: list[Row]) -> RecallHit:
    """`hit` with the rows around it as its lines before and after."""
    before = sorted((line_of(r) for r in rows if r["id"] < hit.id), key=lambda x: x.message_id)
    after = sorted((line_of(r) for r in rows if r["id"] > hit.id), key=lambda x: x.message_id)
    return replace(hit, before=tuple(before), after=tuple(after))
