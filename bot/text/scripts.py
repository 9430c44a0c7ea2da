"""Unicode ranges of the Japanese scripts, as regex character-class fragments, and script runs.

Callers compose the fragments they need: each kept the exact set it used before (some leave
out the compatibility ideographs, the katakana extension or the marks 々〆), so recall, tags
and the knowledge index rank as they did.
"""

from __future__ import annotations

import re
from typing import Final

HAN_UNIFIED: Final = "\u3400-\u4dbf\u4e00-\u9fff"  # Extension A and the unified ideographs
HAN_COMPAT: Final = "\uf900-\ufaff"
HAN_MARKS: Final = "々〆"
HIRAGANA: Final = "\u3040-\u309f"
KATAKANA_BASIC: Final = "\u30a0-\u30ff"  # ー (U+30FC) included
KATAKANA_EXT: Final = "\u31f0-\u31ff"

HAN_IDEOGRAPHS: Final = HAN_UNIFIED + HAN_COMPAT
HAN: Final = HAN_IDEOGRAPHS + HAN_MARKS
KATAKANA: Final = KATAKANA_BASIC + KATAKANA_EXT
JAPANESE: Final = HAN + KATAKANA + HIRAGANA
# The first code point of the kana: at or above it lie kana, ideographs, Hangul, full width.
CJK_FLOOR: Final = "\u3040"

_RUN = re.compile(f"[{HAN}]+|[{KATAKANA}]+|[{HIRAGANA}]+|[^{JAPANESE}]+")
_ANY_JAPANESE = re.compile(f"[{JAPANESE}]")
_ALL_HIRAGANA = re.compile(f"[{HIRAGANA}]+")


def script_runs(text: str) -> list[str]:
    """`text` cut where its script changes: runs of kanji, katakana, hiragana and the rest."""
    return _RUN.findall(text)


def has_japanese(text: str) -> bool:
    """Whether `text` holds a kanji, kana or Japanese mark (々〆)."""
    return _ANY_JAPANESE.search(text) is not None


def is_hiragana(text: str) -> bool:
    """Whether `text` is non-empty and all hiragana."""
    return _ALL_HIRAGANA.fullmatch(text) is not None


def has_cjk(text: str) -> bool:
    """Whether any character of `text` is at or above CJK_FLOOR (kana onwards)."""
    return any(char >= CJK_FLOOR for char in text)
