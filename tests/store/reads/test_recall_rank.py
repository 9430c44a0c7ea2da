"""Recall's pure parts: query terms, the relevance rule, reciprocal rank fusion."""

from __future__ import annotations

from bot.store.reads.recall_rank import (
    SPEAKER_LIFT,
    fuse,
    is_relevant,
    lift_speakers,
    name_words,
    named_speakers,
    parse_terms,
    required_matches,
    spread,
)


def test_terms_drop_stop_words_punctuation_and_possessives() -> None:
    terms = parse_terms("What is the name of my cat's vet? Ask Mochi-Kinako, OK?")
    assert terms.all == ("name", "cat", "vet", "Ask", "Mochi-Kinako")
    assert terms.long == terms.all and terms.short == ()
    assert terms.fts_match == '"name" OR "cat" OR "vet" OR "Ask" OR "Mochi-Kinako"'
    assert parse_terms("CAT cat Cat").all == ("CAT",), "case-folded duplicates once"
    assert parse_terms('he said "x" AI').short == ("AI",), "one letter dropped, two kept"


def test_japanese_words_split_at_script_changes_without_particles() -> None:
    assert parse_terms("私の猫の名前は何ですか").all == ("猫", "名前")
    assert parse_terms("東京タワーに行きたい").all == ("東京", "タワー", "行")
    assert parse_terms("ありがとう").all == ("ありがとう",), "an all-hiragana word stays whole"
    assert parse_terms("です ます の").all == ()
    terms = parse_terms("東京 猫 Sapporo")
    assert terms.short == ("東京", "猫") and terms.long == ("Sapporo",)


def test_the_relevance_rule_on_both_sides() -> None:
    two = parse_terms("cat name")
    assert required_matches(two) == 1
    assert is_relevant(("cat",), two) and not is_relevant((), two)
    four = parse_terms("cat volcano dragon pizza")
    assert not is_relevant(("pizza",), four) and is_relevant(("pizza", "cat"), four)
    assert required_matches(parse_terms(" ".join(f"word{n}" for n in range(12)))) == 3
    assert not is_relevant(("猫",), parse_terms("猫")), "one character is not specific"
    assert is_relevant(("東京",), parse_terms("東京"))
    assert not is_relevant(("AI",), parse_terms("AI")), "two Latin letters are not either"
    assert not is_relevant((), parse_terms("the"))


def test_reciprocal_rank_fusion() -> None:
    assert fuse([["a", "b", "c"]]) == ["a", "b", "c"], "one list comes back unchanged"
    # b is second in both lists, a and c first in one each: b wins.
    assert fuse([["a", "b"], ["c", "b"]]) == ["b", "a", "c"]
    assert fuse([["a", "b"], ["b", "a"]]) == ["a", "b"], "ties keep first-seen order"
    assert fuse([]) == []


def test_spread_lifts_neighbours_but_never_past_the_item_that_lifted_them() -> None:
    scores = {"strong": 1.0, "weak": 0.5, "weaker": 0.1}
    near = {"strong": ["answer", "weak"], "weak": ["strong", "weaker"]}
    out = spread(scores, near, 0.7)
    assert out["answer"] == 0.7, "a new item gets its share"
    assert out["strong"] == 1.0, "nothing flows up to a higher score"
    assert out["weak"] < out["strong"], "capped below the item that lifted it"
    assert out["weaker"] == 0.1 + 0.35
    assert list(out)[:3] == ["strong", "weak", "weaker"], "new items join after"
    assert spread(scores, {}, 0.7) == scores


def test_a_display_name_is_its_words_and_the_whole_name() -> None:
    assert name_words("Aiko Tanaka") == {"aiko", "tanaka", "aiko tanaka"}
    assert name_words("ben_99") == {"ben_99"}
    assert name_words(None) == frozenset() and name_words("") == frozenset()


def test_only_terms_naming_an_author_are_speakers() -> None:
    terms = parse_terms("What did Ben and TANAKA buy in Sapporo?")
    assert named_speakers(terms, ["Aiko Tanaka", "Ben", None]) == {"ben", "tanaka"}
    # A name the candidates' authors do not have is an ordinary term.
    assert named_speakers(terms, ["Carla", None]) == frozenset()
    assert named_speakers(parse_terms("Bento box"), ["Ben"]) == frozenset()


def test_what_a_named_speaker_said_is_lifted_softly() -> None:
    scores = {1: 0.22, 2: 0.20, 3: 0.12, 4: 0.05}
    authors = {1: "Carla", 2: "Ben", 3: "Ben Ito", 4: None}
    lifted = lift_speakers(scores, authors, frozenset({"ben"}))
    assert SPEAKER_LIFT > 1.1
    assert lifted == {1: 0.22, 2: 0.20 * SPEAKER_LIFT, 3: 0.12 * SPEAKER_LIFT, 4: 0.05}
    assert fuse([sorted(lifted, key=lambda n: -lifted[n])]) == [2, 1, 3, 4]
    # Soft: a far stronger match said by someone else stays first.
    assert (
        max(
            lift_speakers({1: 1.0, 2: 0.2}, authors, frozenset({"ben"})).items(),
            key=lambda kv: kv[1],
        )[0]
        == 1
    )
    assert lift_speakers(scores, authors, frozenset()) == scores
