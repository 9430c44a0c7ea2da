"""The Japanese script ranges and script runs of bot.text.scripts."""

from __future__ import annotations

import re
import unicodedata

from bot.text.scripts import (
    HAN,
    HAN_IDEOGRAPHS,
    HAN_UNIFIED,
    HIRAGANA,
    JAPANESE,
    KATAKANA,
    KATAKANA_BASIC,
    has_cjk,
    has_japanese,
    is_hiragana,
    script_runs,
)

# The sets the six modules wrote out by hand before bot/text: each caller's must stay the same.
_BEFORE = {
    "recall kanji, bm25 kanji": (r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆]", HAN),
    "recall katakana, bm25 katakana": (r"[\u30a0-\u30ff\u31f0-\u31ffー]", KATAKANA),
    "recall hiragana": (r"[\u3040-\u309f]", HIRAGANA),
    "recall terms": (
        r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々〆ー]",
        JAPANESE,
    ),
    "recall index": (
        r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]",
        HIRAGANA + KATAKANA_BASIC + HAN_IDEOGRAPHS,
    ),
    "tags": (r"[\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff]", KATAKANA_BASIC + HAN_UNIFIED),
    "nouns": (r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]", HAN_IDEOGRAPHS),
}


def test_each_callers_set_is_the_one_it_wrote_out_before() -> None:
    for name, (before, fragments) in _BEFORE.items():
        old, new = re.compile(before), re.compile(f"[{fragments}]")
        differ = [
            hex(c) for c in range(0x10000) if bool(old.match(chr(c))) != bool(new.match(chr(c)))
        ]
        assert differ == [], name


def test_bm25_hiragana_differs_only_by_an_unassigned_code_point() -> None:
    old, new = re.compile(r"[\u3041-\u309f]"), re.compile(f"[{HIRAGANA}]")
    differ = [c for c in range(0x10000) if bool(old.match(chr(c))) != bool(new.match(chr(c)))]
    assert differ == [0x3040] and unicodedata.category(chr(0x3040)) == "Cn"


def test_script_runs_cut_where_the_script_changes() -> None:
    assert script_runs("私の猫の名前は") == ["私", "の", "猫", "の", "名前", "は"]
    assert script_runs("ラーメン食べたい! OK") == ["ラーメン", "食", "べたい", "! OK"]
    assert script_runs("々〆ㇰ") == ["々〆", "ㇰ"]
    assert "".join(script_runs("mixed 東京タワーへgo")) == "mixed 東京タワーへgo"


def test_japanese_hiragana_and_cjk_predicates() -> None:
    assert has_japanese("say 猫") and has_japanese("ㇰ") and not has_japanese("cat 한국")
    assert is_hiragana("ですか") and not is_hiragana("です。") and not is_hiragana("")
    assert has_cjk("한국") and has_cjk("ｶ") and not has_cjk("café")
