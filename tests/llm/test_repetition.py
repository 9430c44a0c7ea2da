"""The repetition guard: loops in English and Japanese are caught, normal text is not."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bot.llm.repetition import (
    OCCURRENCES,
    REPEATED_SHARE,
    SHINGLE_CHARS,
    WINDOW_CHARS,
    RepetitionGuard,
)
from bot.llm.tokens import estimate_tokens
from bot.llm.types import Usage
from bot.llm.usage_estimate import PromptShape, counted_usage

REPO = Path(__file__).resolve().parents[2]


def caught_at(text: str, piece: int = 4) -> int | None:
    """How many characters were fed when the guard first said the text loops (None: never)."""
    guard = RepetitionGuard()
    for start in range(0, len(text), piece):
        if guard.feed(text[start : start + piece]):
            return min(len(text), start + piece)
    return None


PARAGRAPH = (
    "The French Revolution began in 1789 and changed the country for ever. It ended the "
    "monarchy, and a republic was declared in 1792. "
)
JAPANESE = "フランスの歴史は長く、多くの王朝が続きました。革命によって共和国が生まれました。"


def test_a_repeated_paragraph_is_caught_on_its_third_round() -> None:
    at = caught_at(PARAGRAPH * 20)
    assert at is not None
    period = len(PARAGRAPH)
    # Two rounds to learn the passage, then most of a window of repeats in the third.
    needed = int(REPEATED_SHARE * WINDOW_CHARS)
    assert 2 * period + needed <= at <= 2 * period + WINDOW_CHARS + SHINGLE_CHARS + 4


def test_a_japanese_loop_without_spaces_is_caught() -> None:
    at = caught_at(JAPANESE * 30, piece=2)
    assert at is not None and at <= 2 * len(JAPANESE) + WINDOW_CHARS + SHINGLE_CHARS


def test_a_loop_that_differs_only_in_white_space_and_case_is_caught() -> None:
    rounds = [PARAGRAPH, PARAGRAPH.upper().replace(" ", "\n"), PARAGRAPH.replace(" ", "  ")] * 3
    assert caught_at("".join(rounds)) is not None


def test_a_short_phrase_stuck_on_repeat_is_caught() -> None:
    assert caught_at("ha " * 200) is not None
    assert caught_at("はは" * 300) is not None


def test_the_window_must_be_full_one_character_short_is_not_a_loop() -> None:
    # One character over and over: the window of the last WINDOW passages is first full at
    # character SHINGLE + WINDOW - 1, and all but the first OCCURRENCES - 1 of them repeat.
    assert WINDOW_CHARS - (OCCURRENCES - 1) >= REPEATED_SHARE * WINDOW_CHARS
    just_short = "x" * (SHINGLE_CHARS + WINDOW_CHARS - 2)
    assert caught_at(just_short, piece=1) is None
    assert caught_at(just_short + "x", piece=1) == len(just_short) + 1


def test_a_real_models_loop_with_changing_words_is_caught() -> None:
    # Gemma 3 270M asked about the history of France (bench/real_model.py): rounds of ~450
    # characters that change a number or a few words each time ("page 46", "page 45"…).
    loop = (Path(__file__).parent / "data" / "gemma_loop.txt").read_text("utf-8")
    at = caught_at(loop)
    assert at is not None and at <= 2_300, at
    strict = RepetitionGuard(share=1.0)  # a run of repeats in a row: caught much later
    assert not any(strict.feed(loop[i : i + 4]) for i in range(0, 3_000, 4))


def test_a_passage_quoted_once_more_is_not_a_loop() -> None:
    code = "".join(f"def step_{n}(value):\n    return value * {n} + {n * n}\n\n" for n in range(12))
    answer = f"Here is the code:\n{code}\nAnd here it is again with a fix:\n{code}Done."
    assert caught_at(answer) is None


def test_tables_and_lists_are_not_loops() -> None:
    numeric = "| Year | Population | Growth |\n|---|---|---|\n" + "".join(
        f"| {1900 + n} | {40 + n * 0.3:.1f} | {0.5 + n % 7 * 0.1:.1f} |\n" for n in range(150)
    )
    schedule = "| Time | Mon | Tue | Wed | Thu | Fri |\n|---|---|---|---|---|---|\n" + "".join(
        f"| {8 + n}:00 | — | — | — | — | — |\n" for n in range(10)
    )
    bullets = "".join(
        f"- **Step {n}:** read chapter {n} and take notes on it.\n" for n in range(80)
    )
    japanese = "".join(f"{n}. 第{n}章を読み、要点をノートにまとめる。\n" for n in range(1, 80))
    for text in (numeric, schedule, bullets, japanese):
        assert caught_at(text) is None, text[:80]


@pytest.mark.parametrize("name", ["README.md", "CHANGELOG.md", "bench/README.md"])
def test_the_projects_own_documents_are_not_loops(name: str) -> None:
    assert caught_at((REPO / name).read_text("utf-8")) is None


def test_the_japanese_prompts_are_not_a_loop() -> None:
    texts = json.loads((REPO / "bot/prompts/ja.json").read_text("utf-8"))
    assert caught_at("\n".join(v for v in texts.values() if isinstance(v, str))) is None


def test_once_looping_it_stays_looping_and_cost_stays_small() -> None:
    guard = RepetitionGuard()
    text = (REPO / "README.md").read_text("utf-8")[:20_000]
    started = time.perf_counter()
    for start in range(0, len(text), 4):
        guard.feed(text[start : start + 4])
    per_char = (time.perf_counter() - started) / len(text)
    assert not guard.looping
    assert per_char < 50e-6, f"{per_char * 1e6:.1f} µs per character"
    for _ in range(20):
        guard.feed(PARAGRAPH)
    assert guard.looping and guard.feed("anything new")


def test_counts_the_server_sent_are_kept_and_missing_ones_estimated() -> None:
    shape = PromptShape([{"role": "user", "content": "hello there"}])
    reported = counted_usage(Usage(12, 34), shape, "answer")
    assert (reported.prompt_tokens, reported.completion_tokens, reported.estimated) == (
        12,
        34,
        False,
    )
    missing = counted_usage(None, shape, "an answer of some length", factor=1.5)
    assert missing.estimated
    assert missing.prompt_tokens == round(shape.estimate() * 1.5)
    assert missing.completion_tokens == round(estimate_tokens("an answer of some length") * 1.5)
    half = counted_usage(Usage(12, None), shape, "answer")
    assert (half.prompt_tokens, half.estimated) == (12, True)
    embedded = counted_usage(Usage(7), PromptShape(texts=["a", "b"]), None, embedding=True)
    assert (embedded.prompt_tokens, embedded.completion_tokens, embedded.estimated) == (
        7,
        0,
        False,
    )
