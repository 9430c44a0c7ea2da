"""The redactor masks secrets; its quick pre-checks never skip a pattern that would match."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from bot.utils import redact
from bot.utils.redact import _PATTERNS, MASK, Redactor

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
    # What must follow a word: at the edge, and where case folding changes the text.
    'token"  \t: abcd and key\n=wxyz',
    "api_\u212aey:abcdefgh",
    "BOT\u3000abcdefgh then bot abcdefg",
    "bearer\n\u212aſİıabcd",
    "TOKEN'=abcd",
    "next_token unchanged, a Bot that answers, the secret of the password",
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
    pieces = [word for sample in SAMPLES for word in sample.split()]
    pieces += ["İ", "ı", "\n", "=", ":", '"', "'", "\t", "token", "KEY", "bot", "abcdefg", "h"]
    for _ in range(2000):
        text = " ".join(rng.choices(pieces, k=rng.randint(1, 12)))
        assert Redactor()(text) == redact_without_hints(text), text


def test_redactor_masks_secrets_but_not_paging_tokens() -> None:
    redactor = Redactor(["hunter2-secret"])
    text = (
        '{"api_key": "abc12345", "Authorization": "Bearer abcdefghijklmnop", '
        '"body": "my hunter2-secret", "next_token: eyJ2IjoyfQ"}'
    )
    masked = redactor(text)
    assert "abc12345" not in masked and "abcdefghijklmnop" not in masked
    assert "hunter2-secret" not in masked
    assert "next_token: eyJ2IjoyfQ" in masked


def test_known_secrets_are_masked_first() -> None:
    assert Redactor(["hunter22"])("the password is hunter22") == f"the password is {MASK}"


class SpyPattern:
    """A compiled pattern that counts its substitutions."""

    def __init__(self, pattern: re.Pattern[str], subs: list[str]) -> None:
        self._pattern, self._subs = pattern, subs
        self.flags, self.groupindex = pattern.flags, pattern.groupindex

    def sub(self, repl: Any, text: str) -> str:
        self._subs.append(self._pattern.pattern)
        return self._pattern.sub(repl, text)


@pytest.mark.parametrize(
    ("text", "scans"),
    [
        ("use next_token unchanged; a secret of the bot, the key to it", 0),
        ("the token: abcdef", 1),
        ("Bot abcdefghij", 1),
    ],
)
def test_a_pattern_is_run_only_where_its_word_has_what_follows_it(
    monkeypatch: pytest.MonkeyPatch, text: str, scans: int
) -> None:
    expected = redact_without_hints(text)
    subs: list[str] = []
    monkeypatch.setattr(redact, "_PATTERNS", tuple(SpyPattern(p, subs) for p in _PATTERNS))
    assert Redactor()(text) == expected
    assert len(subs) == scans
