"""The digest an earlier tool result becomes when it no longer fits whole (pure)."""

from __future__ import annotations

from bot.chat.budget.digest import GAP, digest

LINES = [f"Fact {n:03d}: lamp {n} was lit at dusk." for n in range(200)]


def test_a_digest_keeps_whole_lines_from_all_over_the_text_within_its_limit() -> None:
    text = "# Harbour guide\n" + "\n".join(LINES)
    kept = digest(text, 1200)
    assert len(kept) <= 1200
    assert kept.startswith("# Harbour guide\nFact 000:"), "the header and the text's start"
    shown = [line for line in kept.split("\n") if line and line != GAP]
    assert all(line in LINES or line == "# Harbour guide" for line in shown), "lines whole"
    numbers = [int(line[5:8]) for line in shown[1:]]
    assert numbers == sorted(numbers) and max(numbers) > 150, "in order, over the whole text"
    assert f"\n{GAP}\n" in kept, "left-out stretches are marked"


def test_a_digest_of_one_long_japanese_line_keeps_its_own_sentences() -> None:
    text = "京都の紅葉は十一月に見頃を迎えます。嵐山と東福寺が有名です。" * 300
    kept = digest(text, 900)
    assert len(kept) <= 900
    pieces = [piece for piece in kept.split("\n") if piece and piece != GAP]
    assert pieces and text.startswith(pieces[0])
    assert all(piece in text for piece in pieces), "each piece is the text's own"


def test_a_text_that_fits_is_its_own_digest() -> None:
    assert digest("short", 10) == "short"
