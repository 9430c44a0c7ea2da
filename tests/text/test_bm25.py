"""BM25 over bigram terms: term extraction, scoring, ranking."""

from __future__ import annotations

import math

import pytest

from bot.text.bm25 import BM25Index
from bot.text.terms import bigram_terms


def test_bigram_terms_split_scripts() -> None:
    assert bigram_terms("機械学習を勉強") == ["機械", "械学", "学習", "勉強"]
    assert bigram_terms("ラーメン屋") == ["ラー", "ーメ", "メン", "屋"]
    assert bigram_terms("猫が好き") == ["猫", "好"]
    assert bigram_terms("Python と AsyncIO 3.11") == ["python", "asyncio", "11"]
    assert bigram_terms("ＡＢＣ") == ["abc"]
    assert bigram_terms("") == []


def test_bigrams_match_across_segmentation() -> None:
    index = BM25Index([bigram_terms("深層学習と機械学習の入門"), bigram_terms("旅行の計画")])
    scores = index.scores(bigram_terms("機械学習"))
    assert scores[0] > 0
    assert scores[1] == 0


def test_score_matches_the_formula() -> None:
    docs = [["a", "b"], ["b", "c", "c"]]
    index = BM25Index(docs, k1=1.2, b=0.75)
    avgdl = 2.5
    idf_c = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    norm = 1.2 * (1 - 0.75 + 0.75 * 3 / avgdl)
    expected = idf_c * 2 * 2.2 / (2 + norm)
    assert index.scores(["c"]) == pytest.approx([0.0, expected])


def test_more_matching_terms_rank_higher() -> None:
    docs = [
        ["ラー", "ーメ", "メン", "東京"],
        ["東京", "観光", "地図"],
        ["猫", "写真"],
    ]
    index = BM25Index(docs)
    scores = index.scores(["ラー", "ーメ", "メン", "東京"])
    assert scores[0] > scores[1] > scores[2] == 0.0


def test_rare_terms_weigh_more_than_common_ones() -> None:
    docs = [["共通", "珍しい"], ["共通", "x"], ["共通", "y"]]
    index = BM25Index(docs)
    assert index.idf("珍しい") > index.idf("共通") > 0
    assert index.idf("unseen") > index.idf("珍しい")
    scores = index.scores(["共通", "珍しい"])
    assert scores[0] > scores[1] == scores[2] > 0


def test_repeated_query_terms_count_once() -> None:
    index = BM25Index([["a"], ["b"]])
    assert index.scores(["a", "a", "a"]) == index.scores(["a"])


def test_empty_inputs() -> None:
    assert BM25Index([]).scores(["a"]) == []
    assert len(BM25Index([])) == 0
    index = BM25Index([[], ["a"]])
    assert index.scores([]) == [0.0, 0.0]
    assert index.scores(["zzz"]) == [0.0, 0.0]
    assert BM25Index([[], []]).scores(["a"]) == [0.0, 0.0]


def test_query_weight_is_the_score_of_a_perfect_average_document() -> None:
    docs = [["a", "b"], ["c", "d"]]
    index = BM25Index(docs)
    assert index.scores(["a", "b"])[0] == pytest.approx(index.query_weight(["a", "b"]))
