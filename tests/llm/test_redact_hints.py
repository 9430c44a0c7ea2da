"""The redactor's quick pre-checks never skip a pattern that would have matched."""

from __future__ import annotations

import random

import pytest

from bot.llm.redact import _PATTERNS, MASK, Redactor

SAMPLES = [
    "plain chat text about a cat and a dog",
    "key sk-abcdefghijklmnop in the middle",
    "Authorization: Bearer abcdefgh12345678==",
    "BOT   abcdefghijklmn",
    "MTAxMjM0NTY3ODkwMTIzNDU2.GaBcDe.abcdefghijklmnopqrstuvwxyz0123",
    '{"api_key": "supersecret", "TOKEN"= hunter22}',
    "AUTHORİZATION: abcdef",
    "apı-key: 12345678",
    "passWORD=correct-horse",
    "x-api-key: zzzzzzzz, secret: 'ssssss'",
    "ſecret: abcdefg and K-free text",
    "日本語のテキスト token=abcd1234 と Bearer  qwertyuiop",
]


def redact_without_hints(text: str) -> str:
    for pattern in _PATTERNS:
        if "key" in pattern.groupindex:
            text = pattern.sub(lambda m: m.group("key") + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text


@pytest.mark.parametrize("text", SAMPLES)
def test_each_sample_is_redacted_as_by_every_pattern(text: str) -> None:
    assert Redactor()(text) == redact_without_hints(text)


def test_random_mixtures_are_redacted_as_by_every_pattern() -> None:
    rng = random.Random(17)
    pieces = [word for sample in SAMPLES for word in sample.split()] + ["İ", "ı", "\n", "="]
    for _ in range(2000):
        text = " ".join(rng.choices(pieces, k=rng.randint(1, 12)))
        assert Redactor()(text) == redact_without_hints(text), text


def test_known_secrets_are_masked_first() -> None:
    assert Redactor(["hunter22"])("the password is hunter22") == f"the password is {MASK}"
