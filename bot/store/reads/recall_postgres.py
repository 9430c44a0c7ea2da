"""Recall's PostgreSQL reads: the same candidates as SQLite's, ranked by the same bm25.

SQLite's FTS5 ranks by bm25 (`bot.store.reads.recall_bm25`); PostgreSQL has no bm25, and its
`similarity` / `ts_rank` ordered the same candidates differently (R@10 0.43 against 0.53 on
bench/recall.py). So here the GIN indexes only find rows, and the scores are computed in Python
from the same inputs FTS5 uses: each phrase's number of matching rows (counted, bounded, as
SQLite's reads count them), the row's tokens, and the table's rows and tokens per row
(`corpus_all_spaces`: exact for a small table, from a sample of SAMPLE_PAGES pages above).

Every read runs with `indexes_only` (no sequential scan: the planner prices the `ILIKE` and
tsvector filters as cheap per row and would otherwise scan the history).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from bot.store.engine.dialect import Row, like_pattern, make_rows
from bot.store.engine.pinned import Reads
from bot.store.reads.recall_bm25 import Corpus, idf, trigram_score, words_score
from bot.store.reads.recall_hits import MESSAGE_COLUMNS, SESSION_JOIN, Exclude, excluding
from bot.store.reads.recall_words import MONTHS, latin_words, tsquery_words
from bot.store.schema.fulltext import words_tsvector
from bot.text.stemming import stem

# The table statistics' sample: every page of a table this small (so exact), else about this
# many pages picked at random (≈ 1 ms at 1M messages).
SAMPLE_PAGES: Final = 64
_PAGE: Final = 8192
# A sampled table's statistics are kept this long (they move slowly with a large history).
CORPUS_TTL_S: Final = 600.0
# A term counted in the cap's number of messages or more is remembered as common this long
# (the history grows, so it stays common): counting it again would check the cap's number of
# rows (≈ 8-12 ms at 1M, the PostgreSQL tail). At most COMMON_MEMO terms are remembered.
COMMON_TTL_S: Final = 600.0
COMMON_MEMO: Final = 4096
# A term the term index's statistics put in this many times the cap or more is common without
# a count (the margin: ANALYZE's sample guesses, a count is exact).
STATISTICS_MARGIN: Final = 2.0
_LENGTHS: Final = {
    "messages": "GREATEST(char_length(content) - 2, 0)",
    "recall_terms": "COALESCE(array_length(string_to_array(terms, ' '), 1), 0)",
}

Scored = tuple[Row, float]


@dataclass
class _Memo:
    """What the reads remember between recalls (see CORPUS_TTL_S, COMMON_TTL_S)."""

    corpus: dict[str, tuple[float, Corpus]] = field(default_factory=dict)
    common: dict[tuple[str, int], float] = field(default_factory=dict)
    statistics: dict[str, tuple[float, Statistics]] = field(default_factory=dict)


@dataclass(frozen=True)
class Statistics:
    """What ANALYZE's sample says (empty before one): the term index's most common words
    with the share of rows holding each, its row count, the most common speaker names."""

    shares: dict[str, float]
    total: float
    authors: tuple[str, ...]


class PostgresRecall:
    """The PostgreSQL side of `bot.store.reads.recall.RecallRepository`."""

    def __init__(
        self,
        db: Reads,
        clock: Callable[[], float] = time.monotonic,
        memo: _Memo | None = None,
    ) -> None:
        self._db = db
        self._clock = clock
        self._memo = memo or _Memo()

    def over(self, reads: Reads) -> PostgresRecall:
        """The same reads (and what they remember) through `reads` (pinned reads)."""
        return PostgresRecall(reads, self._clock, self._memo)

    async def statistics(self, words_index: str) -> Statistics:
        """The planner's statistics recall reads (one catalog read, kept CORPUS_TTL_S: they
        change only when ANALYZE runs)."""
        kept = self._memo.statistics.get(words_index)
        if kept is not None and self._clock() - kept[0] < CORPUS_TTL_S:
            return kept[1]
        row = await self._db.fetchone(
            "SELECT w.most_common_elems::text::text[] AS elems, "
            "w.most_common_elem_freqs AS freqs, c.reltuples AS total, "
            "(SELECT a.most_common_vals::text::text[] FROM pg_stats a "
            "WHERE a.schemaname = current_schema() AND a.tablename = 'messages' "
            "AND a.attname = 'author_name') AS authors "
            "FROM pg_class c LEFT JOIN pg_stats w ON w.schemaname = current_schema() "
            "AND w.tablename = ? WHERE c.oid = CAST('recall_terms' AS regclass)",
            (words_index,),
        )
        found = Statistics({}, 0.0, ())
        if row is not None:
            elems, freqs = row["elems"] or [], row["freqs"] or []
            found = Statistics(
                dict(zip(elems, freqs, strict=False)) if elems else {},
                max(float(row["total"]), 0.0),
                tuple(str(name) for name in row["authors"] or []),
            )
        if found.shares:
            self._memo.statistics[words_index] = (self._clock(), found)
        return found

    async def corpus_all_spaces(self, table: str) -> Corpus:
        """`table`'s rows and tokens (trigrams of `messages`, words of `recall_terms`), as
        FTS5 keeps them for bm25: over every space, like the full-text table's postings.
        A sampled (large) table's figures are reused for CORPUS_TTL_S."""
        kept = self._memo.corpus.get(table)
        if kept is not None and self._clock() - kept[0] < CORPUS_TTL_S:
            return kept[1]
        corpus, sampled = await self._measure(table)
        if sampled:
            self._memo.corpus[table] = (self._clock(), corpus)
        return corpus

    async def _measure(self, table: str) -> tuple[Corpus, bool]:
        """The table's figures, and whether they come from a sample (not every page)."""
        size = await self._db.fetchone(
            "SELECT c.reltuples AS estimate, pg_relation_size(c.oid) AS bytes "
            "FROM pg_class c WHERE c.oid = CAST(? AS regclass)",
            (table,),
        )
        pages = max(float(size["bytes"]) / _PAGE, 1.0) if size is not None else 1.0
        share = min(100.0, 100.0 * SAMPLE_PAGES / pages)
        # REPEATABLE: the same pages each time, so a ranking does not move between reads.
        sample = await self._db.fetchone(
            f"SELECT COUNT(*) AS n, COALESCE(SUM({_LENGTHS[table]}), 0) AS tokens "
            f"FROM {table} TABLESAMPLE SYSTEM (?) REPEATABLE (0)",
            (share,),
        )
        rows, tokens = (float(sample["n"]), float(sample["tokens"])) if sample else (0.0, 0.0)
        if share >= 100.0 or rows <= 0:
            return Corpus(rows, tokens), False
        estimate = float(size["estimate"]) if size is not None else -1.0
        total = estimate if estimate > 0 else rows * 100.0 / share
        return Corpus(total, tokens / rows * total), True

    async def term_counts_all_spaces(
        self,
        terms: Sequence[str],
        limit: int,
        word_docs: Mapping[str, int],
        authors: Sequence[str] = (),
    ) -> dict[str, int]:
        """Each long term's number of messages holding it (every space, as FTS5's postings),
        counted up to `limit` only: the pg_trgm index finds them, `limit` rows are checked
        (≈ 8-12 ms for a common term at 1M). Not counted: a term found that common within
        COMMON_TTL_S, or one `common_by_words` finds in `word_docs` (the term index's
        statistics: word → estimated rows; `authors`: the common speaker names)."""
        now = self._clock()
        known = {
            term: limit
            for term in terms
            if now - self._memo.common.get((term.casefold(), limit), -COMMON_TTL_S) < COMMON_TTL_S
        } | common_by_words(terms, limit, word_docs, authors)
        counted = await self._count_all_spaces([term for term in terms if term not in known], limit)
        for term, docs in counted.items():
            if docs >= limit:
                self._memo.common.pop((term.casefold(), limit), None)
                self._memo.common[(term.casefold(), limit)] = now
        while len(self._memo.common) > COMMON_MEMO:
            del self._memo.common[next(iter(self._memo.common))]
        return {term: known.get(term, counted.get(term, 0)) for term in terms}

    async def _count_all_spaces(self, terms: Sequence[str], limit: int) -> dict[str, int]:
        """Each term's messages (every space), counted up to `limit` in one read."""
        if not terms:
            return {}
        count = (
            "SELECT COUNT(*) FROM (SELECT 1 FROM messages WHERE content ILIKE ? ESCAPE '\\' "
            "LIMIT ?) c"
        )
        sql = " UNION ALL ".join(f"SELECT {n} AS n, ({count}) AS docs" for n in range(len(terms)))
        params = [value for term in terms for value in (like_pattern(term), limit)]
        rows = await self._db.fetchall(sql, params, indexes_only=True)
        docs = {int(row["n"]): int(row["docs"]) for row in rows}
        return {term: docs.get(n, 0) for n, term in enumerate(terms)}

    async def trigram_rows(
        self,
        space: str,
        terms: Sequence[str],
        counts: dict[str, int],
        exclude: Exclude | None,
        *,
        every: bool,
        limit: int,
    ) -> list[Row]:
        """Messages of `space` holding any of `terms` (`every`: all of them, the newest
        `limit`), scored as FTS5's bm25 over those phrases; the best `limit`."""
        if not every:
            return await self._any_term(space, terms, counts, exclude, limit)
        skip, skip_params = excluding(exclude, "m.session_id")
        match = " AND ".join("m.content ILIKE ? ESCAPE '\\'" for _ in terms)
        rows = await self._db.fetchall(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m {SESSION_JOIN} "
            f"WHERE m.space_id = ? AND m.recall_hidden = 0{skip} AND ({match}) "
            "ORDER BY m.id DESC LIMIT ?",
            (space, *skip_params, *(like_pattern(t) for t in terms), limit),
            indexes_only=True,
        )
        if not rows:
            return []
        corpus = await self.corpus_all_spaces("messages")
        idfs = [idf(corpus, counts.get(term, 0)) for term in terms]
        scored = [
            (row, trigram_score(str(row["content"]), terms, idfs, corpus.average)) for row in rows
        ]
        return _best(scored, limit)

    async def _any_term(
        self,
        space: str,
        terms: Sequence[str],
        counts: dict[str, int],
        exclude: Exclude | None,
        limit: int,
    ) -> list[Row]:
        """`trigram_rows` for any of the terms: every match's text scored, then only the
        best messages read with their sessions (a few more than needed at a time)."""
        inner, inner_params = exclude.inner("session_id") if exclude else ("", [])
        match = " OR ".join("content ILIKE ? ESCAPE '\\'" for _ in terms)
        found = await self._db.fetchall(
            f"SELECT id, content FROM messages WHERE space_id = ? AND recall_hidden = 0{inner} "
            f"AND ({match})",
            (space, *inner_params, *(like_pattern(t) for t in terms)),
            indexes_only=True,
        )
        if not found:
            return []
        corpus = await self.corpus_all_spaces("messages")
        idfs = [idf(corpus, counts.get(term, 0)) for term in terms]
        score = {
            int(row["id"]): trigram_score(str(row["content"]), terms, idfs, corpus.average)
            for row in found
        }
        order = sorted(score, key=lambda n: (score[n], -n))
        visible = await self._visible_first(space, order, exclude, limit)
        return _best([(row, score[int(row["id"])]) for row in visible], limit)

    async def _visible(self, space: str, ids: list[int], exclude: Exclude | None) -> list[Row]:
        """The messages of `ids` in `space` a recall may show, by primary key (found first
        through a GIN index alone: joined with it, the planner guessed 1% of the table and
        hashed every session of the space)."""
        if not ids:
            return []
        skip, skip_params = excluding(exclude, "m.session_id")
        # One array parameter: hundreds of `?`s cost more to send and plan than to read.
        return await self._db.fetchall(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m {SESSION_JOIN} "
            f"WHERE m.space_id = ? AND m.recall_hidden = 0{skip} "
            "AND m.id = ANY(CAST(? AS bigint[]))",
            (space, *skip_params, ids),
            indexes_only=True,
        )

    async def newest_rows(
        self, space: str, terms: Sequence[str], exclude: Exclude | None, limit: int
    ) -> list[Row]:
        """The newest `limit` messages of `space` holding any of `terms` (score 0): each
        term's newest `limit` through the space's id order, united, the newest kept."""
        inner, inner_params = exclude.inner("session_id") if exclude else ("", [])
        outer, outer_params = exclude.outer() if exclude else ("", [])
        each = (
            "SELECT id FROM (SELECT id FROM messages WHERE space_id = ? AND recall_hidden = 0 "
            f"AND content ILIKE ? ESCAPE '\\'{inner} ORDER BY id DESC LIMIT ?) t{{n}}"
        )
        union = " UNION ".join(each.format(n=n) for n in range(len(terms)))
        per_term = [
            value for term in terms for value in (space, like_pattern(term), *inner_params, limit)
        ]
        rows = await self._db.fetchall(
            f"SELECT {MESSAGE_COLUMNS} FROM messages m {SESSION_JOIN} "
            f"WHERE m.space_id = ? AND m.id IN ({union}){outer} ORDER BY m.id DESC LIMIT ?",
            (space, *per_term, *outer_params, limit),
            indexes_only=True,
        )
        return _best([(row, 0.0) for row in rows], limit)

    async def word_rows(
        self,
        space: str,
        words: Sequence[str],
        counts: dict[str, int],
        exclude: Exclude | None,
        *,
        newest: bool,
        limit: int,
    ) -> list[Row]:
        """Messages of `space` whose index words hold any of `words` (each in fewer rows than
        the caller's cap, so all of them are read), scored as FTS5's bm25 over the term
        index (`newest`: the newest first, score 0); the best `limit`, with `index_terms`."""
        found = await self._db.fetchall(
            "SELECT id, terms FROM recall_terms "
            f"WHERE space_id = ? AND {words_tsvector('terms')} @@ CAST(? AS tsquery)",
            (space, tsquery_words(words)),
            indexes_only=True,
        )
        index_terms = {int(row["id"]): str(row["terms"]) for row in found}
        if newest:
            order = sorted(index_terms, reverse=True)
            score = dict.fromkeys(order, 0.0)
        else:
            corpus = await self.corpus_all_spaces("recall_terms") if found else Corpus(0, 0)
            idfs = [idf(corpus, counts.get(word, 0)) for word in words]
            score = {
                n: words_score(terms, words, idfs, corpus.average)
                for n, terms in index_terms.items()
            }
            order = sorted(score, key=lambda n: (score[n], -n))
        visible = await self._visible_first(space, order, exclude, limit)
        rows = make_rows(
            [*visible[0].keys(), "index_terms"] if visible else [],
            [(*row, index_terms[int(row["id"])]) for row in visible],
        )
        return _best([(row, score[int(row["id"])]) for row in rows], limit)

    async def _visible_first(
        self, space: str, order: list[int], exclude: Exclude | None, limit: int
    ) -> list[Row]:
        """The first `limit` messages of `order` a recall may show, read a few more than
        needed at a time (the rest of a rare word's rows are never read)."""
        rows: list[Row] = []
        start = 0
        while len(rows) < limit and start < len(order):
            missing = limit - len(rows)
            step = missing + max(missing // 4, 10)
            rows += await self._visible(space, order[start : start + step], exclude)
            start += step
        return rows


def _best(scored: list[Scored], limit: int) -> list[Row]:
    """The `limit` lowest scores, the newest first on ties (FTS5's `ORDER BY rank, id DESC`),
    as rows with a `score` column like SQLite's reads."""
    best = sorted(scored, key=lambda item: (item[1], -int(item[0]["id"])))[:limit]
    if not best:
        return []
    return make_rows([*best[0][0].keys(), "score"], [(*row, score) for row, score in best])


def common_by_words(
    terms: Sequence[str], limit: int, word_docs: Mapping[str, int], authors: Sequence[str]
) -> dict[str, int]:
    """The terms that are, as they are, a word of the term index its statistics put in
    STATISTICS_MARGIN × `limit` rows or more: a message whose index words hold it has it
    in its text, so the text match is at least as common. Not for words that may come
    from elsewhere than the text: a common speaker's name, a date (year, month)."""
    if not word_docs:
        return {}
    names = {word for name in authors for word in latin_words(name)}
    dates = {stem(month) for month in MONTHS}
    out: dict[str, int] = {}
    for term in terms:
        word = term.casefold()
        if stem(word) != word or word in names or word in dates or word.isdigit():
            continue
        docs = word_docs.get(word, 0)
        if docs >= STATISTICS_MARGIN * limit:
            out[term] = docs
    return out
