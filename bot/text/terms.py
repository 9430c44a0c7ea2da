"""The knowledge base's index terms: character bigrams of Japanese runs, Latin words."""

from __future__ import annotations

import re
import unicodedata

from bot.text.scripts import HAN, HIRAGANA, KATAKANA, is_hiragana

# Runs of one script. Kanji, kana and Latin words never share a term, so a particle next to a
# noun (猫が) does not hide the noun.
_RUNS = re.compile(f"[{HAN}]+|[{HIRAGANA}]+|[{KATAKANA}]+|[A-Za-z0-9][A-Za-z0-9_+#]*")


def bigram_terms(text: str) -> list[str]:
    """Index terms: character bigrams of each kanji/kana run (a 1-char kanji or katakana run
    is kept whole; a lone hiragana is a particle) and lower-cased Latin words of 2+ characters.

    Bigrams need no dictionary, so indexing a large knowledge base costs milliseconds where
    Janome would take seconds, and they match across segmentation differences (機械学習).
    """
    terms: list[str] = []
    for match in _RUNS.finditer(unicodedata.normalize("NFKC", text)):
        run = match.group()
        if run.isascii():
            if len(run) >= 2:
                terms.append(run.lower())
        elif len(run) == 1:
            if not is_hiragana(run):
                terms.append(run)
        else:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms
