"""Recall's query terms, ranking and relevance rule (pure functions, no database).

Terms: the query split into words (letters, digits, `'`, `-`); words that mix Japanese scripts
are cut where the script changes and their hiragana runs (particles, endings: の, は, ですか)
are dropped, so 「私の猫の名前は」 gives 猫 and 名前 without a segmenter; a word that is all
hiragana stays whole. English and Japanese stop words and one-letter Latin words are dropped.
Terms of MIN_FTS_CHARS or more go to the full-text index; shorter ones (東京, 猫, AI) to a
bounded LIKE window (see `bot.store.reads.recall`).

Ranking (lexical): more distinct query terms matched first, then the engine's score (FTS5
bm25 on SQLite, negated trigram similarity on PostgreSQL; lower is better), then the newest.
`fuse` merges several ranked lists by reciprocal rank fusion, for when a second ranking (e.g.
embeddings) joins the lexical one.

Speakers: a query term that names an author of the candidates (a word of their display name:
"What did Ben buy?") is about what that person said — in conversations it is mostly their own
messages that answer — and not about the messages that merely address them ("Thanks, Ben!").
`lift_speakers` multiplies the fused score of what they said by SPEAKER_LIFT: a soft filter,
so a strong match said by someone else still stands.

Relevance (the related-memories layer): a hit must match at least `required_matches(terms)`
distinct terms — half of them rounded up, at most MAX_REQUIRED — and one of its matched terms
must be specific (`is_specific`: 3+ characters, or 2+ Japanese/Chinese characters). Term
counts and not a bm25 cutoff, because bm25 magnitudes move with the size of the space's
history and PostgreSQL has no bm25: a count means the same on both engines at any size.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from bot.text.scripts import has_japanese, is_hiragana, script_runs

MIN_FTS_CHARS: Final = 3
MAX_TERMS: Final = 12
MAX_REQUIRED: Final = 3
RRF_K: Final = 60
# bench/recall_heldout.py, tuning conversations 26 and 30, R@10 of categories 1-4 / of
# category 5 (adversarial: the question names the wrong person): ×1 0.621 / 0.890, ×1.2 0.631 /
# 0.849, ×1.3 0.647 / 0.808, ×1.5 0.647 / 0.781, ×2 0.660 / 0.466 (term weights in place). The
# generated set (bench/recall.py) 0.533 throughout. Before the neighbours' lift it lost.
SPEAKER_LIFT: Final = 1.3

STOP_WORDS_EN: Final = frozenset(
    """
    a an the and or but if then so of to in on at by for with from as into about over after
    before up down out off than too very can could will would shall should may might must do
    does did done doing be is am are was were been being have has had having i me my mine
    myself we us our ours you your yours he him his she her hers it its they them their theirs
    this that these those there here what which who whom whose when where why how all any
    some no not yes ok okay oh hi hello hey thanks thank please just also again still now
    tell say said know think like get got let lets me remember recall
    what's it's i'm don't didn't can't isn't that's there's you're let's
    """.split()
)
STOP_WORDS_JA: Final = frozenset(
    """
    の は が を に で と も へ や か ね よ な から まで より って です ます でした ました ですか
    ますか だ だった て た し こと もの これ それ あれ どれ この その あの どの ここ そこ
    私 僕 俺 あなた 何 なに なん 誰 だれ いつ どこ どう
    """.split()
)
STOP_WORDS: Final = STOP_WORDS_EN | STOP_WORDS_JA

_CONTROL = re.compile(r"[\x00-\x1f\x7f\ue000\ue001]")
_WORD = re.compile(r"[\w'’\-]+")

T = TypeVar("T", bound=Hashable)
R = TypeVar("R", bound="Ranked")


@dataclass(frozen=True)
class Terms:
    """A query's terms: `long` ones go to the full-text index, `short` ones to LIKE."""

    all: tuple[str, ...]

    @property
    def long(self) -> tuple[str, ...]:
        """Terms of MIN_FTS_CHARS characters or more."""
        return tuple(term for term in self.all if len(term) >= MIN_FTS_CHARS)

    @property
    def short(self) -> tuple[str, ...]:
        """Terms shorter than MIN_FTS_CHARS (Japanese 東京, 猫; Latin AI)."""
        return tuple(term for term in self.all if len(term) < MIN_FTS_CHARS)

    @property
    def fts_match(self) -> str:
        """The FTS5 expression: every long term a quoted phrase, OR-ed (FTS syntax typed by
        a user is searched as text, never parsed)."""
        return " OR ".join('"' + term.replace('"', '""') + '"' for term in self.long)

    @property
    def fts_match_all(self) -> str:
        """The FTS5 expression holding every long term (AND-ed quoted phrases)."""
        return " AND ".join('"' + term.replace('"', '""') + '"' for term in self.long)


def _pieces(word: str) -> list[str]:
    """A word cut where its Japanese script changes, hiragana runs dropped (unless the whole
    word is hiragana)."""
    word = word.strip("'’-")
    for suffix in ("'s", "’s"):
        if word.lower().endswith(suffix):
            word = word[: -len(suffix)]
    if not has_japanese(word) or is_hiragana(word):
        return [word] if word else []
    return [
        run.strip("'’-") for run in script_runs(word) if not is_hiragana(run) and run.strip("'’-")
    ]


def parse_terms(text: str) -> Terms:
    """The distinct content terms of a query (case-folded duplicates removed), at most
    MAX_TERMS, in the order they appear."""
    seen: set[str] = set()
    terms: list[str] = []
    for word in _WORD.findall(_CONTROL.sub(" ", text)):
        for piece in _pieces(word):
            folded = piece.casefold()
            if folded in seen or folded in STOP_WORDS:
                continue
            if len(piece) < 2 and not has_japanese(piece):
                continue
            seen.add(folded)
            terms.append(piece)
    return Terms(tuple(terms[:MAX_TERMS]))


def matched_terms(text: str, terms: Terms) -> tuple[str, ...]:
    """The terms found in `text` (case-insensitive substrings, as the trigram index matches)."""
    folded = text.casefold()
    return tuple(term for term in terms.all if term.casefold() in folded)


def is_specific(term: str) -> bool:
    """A term that says something on its own: 3+ characters, or 2+ Japanese/Chinese ones."""
    return len(term) >= MIN_FTS_CHARS or (len(term) >= 2 and has_japanese(term))


def required_matches(terms: Terms) -> int:
    """How many distinct terms a related memory must match: half, rounded up, ≤ MAX_REQUIRED."""
    return min(MAX_REQUIRED, math.ceil(len(terms.all) / 2))


def is_relevant(matched: Sequence[str], terms: Terms) -> bool:
    """The related-memories threshold (see the module docstring)."""
    distinct = {term.casefold() for term in matched}
    return (
        bool(terms.all)
        and len(distinct) >= required_matches(terms)
        and any(is_specific(term) for term in matched)
    )


class Ranked(Protocol):
    """What lexical ranking reads of a hit."""

    @property
    def matched(self) -> tuple[str, ...]:
        """The query terms the hit contains."""
        ...

    @property
    def score(self) -> float:
        """The engine's score: lower is better."""
        ...

    @property
    def created_at(self) -> str:
        """When it was said (ISO 8601, UTC)."""
        ...

    @property
    def id(self) -> int:
        """Its row id."""
        ...


def lexical_order(hits: Iterable[R]) -> list[R]:
    """Best first: more distinct terms matched, then the lower score, then the newest."""
    newest = sorted(hits, key=lambda hit: (hit.created_at, hit.id), reverse=True)
    return sorted(
        newest, key=lambda hit: (-len({t.casefold() for t in hit.matched}), round(hit.score, 9))
    )


def fuse_scores(
    rankings: Sequence[Sequence[T]], k: int = RRF_K, weights: Sequence[float] = ()
) -> dict[T, float]:
    """Reciprocal rank fusion scores: Σ weight/(k + rank) over the lists an item is in (rank
    from 1; weight 1 unless `weights` gives one per list), in first-seen order."""
    scores: dict[T, float] = {}
    for index, ranking in enumerate(rankings):
        weight = weights[index] if index < len(weights) else 1.0
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return scores


def best_first(scores: Mapping[T, float]) -> list[T]:
    """The keys, highest score first, ties kept in the mapping's order."""
    order = {item: index for index, item in enumerate(scores)}
    return sorted(scores, key=lambda item: (-scores[item], order[item]))


def fuse(rankings: Sequence[Sequence[T]], k: int = RRF_K, weights: Sequence[float] = ()) -> list[T]:
    """Reciprocal rank fusion (`fuse_scores`), best first, ties kept in first-seen order.
    One list comes back unchanged."""
    return best_first(fuse_scores(rankings, k, weights))


def spread(
    scores: Mapping[T, float], neighbours: Mapping[T, Sequence[T]], share: float
) -> dict[T, float]:
    """Each item of `neighbours` gives `share` of its score to each neighbour scored lower
    (new items join after the others); a neighbour never passes the best item that lifted
    it, so a run of weak matches cannot climb over a stronger one beside it."""
    gains: dict[T, float] = {}
    caps: dict[T, float] = {}
    for item, near in neighbours.items():
        score = scores.get(item, 0.0)
        for other in near:
            if score > scores.get(other, 0.0):
                gains[other] = gains.get(other, 0.0) + share * score
                caps[other] = max(caps.get(other, 0.0), score * (1 - 1e-9))
    out = dict(scores)
    for other, gain in gains.items():
        out[other] = min(scores.get(other, 0.0) + gain, caps[other])
    return out


def name_words(name: str | None) -> frozenset[str]:
    """A display name's case-folded words and the whole name (`Aiko Tanaka` → aiko, tanaka,
    aiko tanaka); none for the bot's own messages."""
    if not name:
        return frozenset()
    folded = name.casefold().strip()
    return frozenset(piece.strip("'’-") for piece in _WORD.findall(folded)) | {folded}


def named_speakers(terms: Terms, authors: Iterable[str | None]) -> frozenset[str]:
    """The query's terms (case-folded) that name one of `authors`."""
    known = frozenset().union(*(name_words(author) for author in authors))
    return frozenset(term.casefold() for term in terms.all) & known


def lift_speakers(
    scores: Mapping[T, float], authors: Mapping[T, str | None], named: frozenset[str]
) -> dict[T, float]:
    """`scores` with what a named speaker said multiplied by SPEAKER_LIFT (see the module
    docstring); unchanged when the query names nobody."""
    if not named:
        return dict(scores)
    return {
        item: score * SPEAKER_LIFT if name_words(authors.get(item)) & named else score
        for item, score in scores.items()
    }
