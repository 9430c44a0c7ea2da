"""InProcessAnalyzer (what the analysis worker runs): content nouns, stop words, noise removal,
off-loop and serialised use."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from bot.memory.japanese import EN_STOP_WORDS, JA_STOP_WORDS, InProcessAnalyzer, clean_text


@pytest.fixture(scope="module")
def analyzer() -> Iterator[InProcessAnalyzer]:
    a = InProcessAnalyzer()
    yield a
    a.close()


def test_japanese_sentence_gives_content_nouns(analyzer: InProcessAnalyzer) -> None:
    nouns = analyzer.nouns("今日は東京で美味しいラーメンを食べました。")
    assert nouns == ["東京", "ラーメン"]


def test_short_compounds_are_joined(analyzer: InProcessAnalyzer) -> None:
    nouns = analyzer.nouns("最近、機械学習の勉強を始めた。円安が進んでいる。")
    assert "機械学習" in nouns
    assert "円安" in nouns
    assert "勉強" in nouns
    assert "機械" not in nouns


def test_english_sentence_keeps_words_and_drops_stop_words(analyzer: InProcessAnalyzer) -> None:
    nouns = analyzer.nouns("I learned about Kubernetes and Python with my friends")
    assert "Kubernetes" in nouns
    assert "Python" in nouns
    assert not {"I", "about", "and", "with", "my"} & set(nouns)


def test_stop_words_are_dropped(analyzer: InProcessAnalyzer) -> None:
    nouns = analyzer.nouns("自分のことは本当に感じで、その人の事は the thing と猫")
    assert nouns == ["猫"]
    assert "自分" in JA_STOP_WORDS
    assert "the" in EN_STOP_WORDS


def test_urls_mentions_code_and_emoji_are_dropped(analyzer: InProcessAnalyzer) -> None:
    text = (
        "<@1234> <#99> <:blob:555> https://example.com/path?q=写真 を見て :smile: 😀\n"
        "```python\nvariable_name = カメラ\n```\n`inline_code` 天気の話"
    )
    assert analyzer.nouns(text) == ["天気"]


def test_numbers_pronouns_and_single_kana_are_dropped(analyzer: InProcessAnalyzer) -> None:
    assert analyzer.nouns("私はこれを3つ持っている。それは2024年のものだ") == []


def test_full_width_is_normalised(analyzer: InProcessAnalyzer) -> None:
    assert analyzer.nouns("ＡＩとｶﾒﾗ") == ["AI", "カメラ"]


def test_empty_and_blank_text(analyzer: InProcessAnalyzer) -> None:
    assert analyzer.nouns("") == []
    assert analyzer.nouns("   \n ") == []


def test_clean_text_strips_unterminated_fence() -> None:
    assert "secret_code" not in clean_text("見て ```\nsecret_code")


async def test_async_calls_run_on_the_analyzer_thread(analyzer: InProcessAnalyzer) -> None:
    threads: list[str] = []

    class Recording(InProcessAnalyzer):
        def nouns(self, text: str) -> list[str]:
            threads.append(threading.current_thread().name)
            return super().nouns(text)

    recording = Recording()
    try:
        assert await recording.nouns_async("猫と犬") == ["猫", "犬"]
        assert await recording.nouns_many(["カメラ", "写真"]) == [["カメラ"], ["写真"]]
    finally:
        recording.close()
    assert threads
    assert all(name.startswith("janome") for name in threads)
    assert threading.main_thread().name not in threads


async def test_concurrent_use_matches_sequential_results(analyzer: InProcessAnalyzer) -> None:
    texts = [f"東京のラーメンとカメラの話{i}。機械学習も好き" for i in range(40)]
    expected = [analyzer.nouns(text) for text in texts]
    got = await asyncio.gather(*(analyzer.nouns_async(text) for text in texts))
    assert list(got) == expected
    assert await analyzer.nouns_many([]) == []


async def test_one_tokenizer_is_loaded_once() -> None:
    a = InProcessAnalyzer()
    try:
        await a.warm_up()
        first = a._tokenizer
        await a.nouns_many(["猫", "犬"])
        assert first is not None
        assert a._tokenizer is first
    finally:
        a.close()


def test_long_input_is_cut() -> None:
    short = InProcessAnalyzer(max_chars=7)
    try:
        assert short.nouns("猫と犬の写真。カメラの話") == ["猫", "犬", "写真"]
    finally:
        short.close()


def test_only_nouns_and_proper_nouns_are_kept_from_japanese(analyzer: InProcessAnalyzer) -> None:
    # 食べ/行っ (動詞), 美味しい (形容詞), は/で/を (助詞), こと (非自立), 3/2024 (数), 違い
    # (an adjective's stem) and 勉強 used as a verb (勉強した) go; 旅行 as a noun stays.
    text = "昨日は京都で美味しい湯豆腐を食べて、英語を勉強した。3個のこと。2024年の旅行は違いがない"
    assert analyzer.nouns(text) == ["京都", "湯豆腐", "英語", "旅行"]
    assert analyzer.nouns("大阪に行って野球した") == ["大阪", "野球"], "野球 is no verbal noun"


def test_english_verbs_adjectives_and_adverbs_are_dropped(analyzer: InProcessAnalyzer) -> None:
    nouns = analyzer.nouns(
        "Yesterday I was running and played Zelda, then studies of Python made us happy in Osaka"
    )
    assert nouns == ["Zelda", "Python", "Osaka"]
