"""The English stemmer of bot.text.stemming (moved from bot.store.reads.recall_words)."""

from __future__ import annotations

import pytest

from bot.text.stemming import stem


@pytest.mark.parametrize(
    "words",
    [
        ("moving", "moved", "moves", "move"),
        ("adopted", "adopting", "adopts", "adopt"),
        ("married", "marry", "marries"),
        ("running", "runs"),
        ("migrated", "migration", "migrate"),
        ("cats", "cat"),
        ("teaches", "teaching", "teach"),
    ],
)
def test_inflections_share_a_stem(words: tuple[str, ...]) -> None:
    assert len({stem(word) for word in words}) == 1, [stem(word) for word in words]


def test_short_and_non_english_words_stay_as_they_are() -> None:
    assert [stem(w) for w in ("bus", "Sapporo", "東京", "X1", "is")] == [
        "bus", "sapporo", "東京", "x1", "is",
    ]  # fmt: skip
