"""The words of recall's term index: index text and query words (pure)."""

from __future__ import annotations

import math

import pytest

from bot.store.reads.recall_rank import parse_terms
from bot.store.reads.recall_words import (
    common_words,
    index_text,
    matched_words,
    query_words,
    term_weights,
)


def test_index_text_holds_words_speaker_and_date() -> None:
    text = index_text("I moved to Sapporo!", "Ben", "2026-03-04T10:00:00+00:00", ["東京", "転勤"])
    assert text.split() == ["mov", "sapporo", "東京", "転勤", "ben", "2026", "202603", "march"]


def test_query_words_match_through_stems_names_and_bigrams() -> None:
    wanted = query_words(parse_terms("Where is Ben moving? 転勤先 2026-03"))
    assert wanted["moving"] == ("mov",)
    assert wanted["転勤先"] == ("転勤先", "転勤", "勤先")
    assert "202603" in wanted["2026-03"]
    assert matched_words("mov 東京 転勤 ben 2026 202603 march", wanted) == (
        "Ben", "moving", "転勤先", "2026-03",
    )  # fmt: skip


def test_common_words_are_left_out_of_the_match_unless_all_are() -> None:
    counts = {"carla": 900, "adopt": 3, "2026": 1000, "greyhound": 0}
    assert common_words(counts, 900) == (["adopt", "greyhound"], ["carla", "2026"])
    assert common_words(counts, 1001) == (list(counts), [])
    assert common_words({"carla": 5, "2026": 7}, 5) == ([], ["carla", "2026"])


def test_within_a_budget_the_rarest_words_are_kept_first() -> None:
    counts = {"carla": 120, "adopt": 30, "dog": 90, "greyhound": 2}
    # Rarest first while the rows stay within 100: greyhound (2) and adopt (30), not dog (90).
    assert common_words(counts, 500, 100) == (["adopt", "greyhound"], ["carla", "dog"])
    # The rarest word is kept even beyond the budget.
    assert common_words({"carla": 400, "dog": 300}, 500, 100) == (["dog"], ["carla"])


def test_term_weights_follow_rarity_and_cap_at_the_count_limit() -> None:
    wanted = {
        "Carla": ("carla",),
        "kayak": ("kayak",),
        "東京都": ("東京都", "東京", "京都"),
        "x": (),
    }
    counts = {"carla": 500, "kayak": 3, "東京都": 0, "東京": 40, "京都": 9}
    weights = term_weights(wanted, counts, 500)
    assert weights["Carla"] == pytest.approx(math.log(2))  # counted up to the limit: common
    assert weights["kayak"] == pytest.approx(math.log(1 + 500 / 3))
    assert weights["東京都"] == pytest.approx(math.log(501))  # its rarest word decides
    assert weights["x"] == pytest.approx(math.log(2))  # no index word: as a common one
    assert weights["kayak"] > weights["Carla"]
