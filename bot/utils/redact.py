"""Remove credentials from anything written to api_logs or log lines."""

from __future__ import annotations

import re
from collections.abc import Iterable

_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\b(?:Bearer|Bot)\s+[A-Za-z0-9._\-~+/]{8,}=*", re.IGNORECASE),
    re.compile(r"\b[MN][A-Za-z\d_\-]{23,27}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,}"),
    re.compile(
        r"(?P<key>(?<![\w-])[\"']?(?:api[_-]?key|authorization|x-api-key|token|password|secret)"
        r"[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\"'\s,}]{4,})",
        re.IGNORECASE,
    ),
)
# What each pattern's match must contain, found with str methods (a scan of every position
# with the patterns above costs about 0.25 ms per 1,000 characters): a literal (case-folded for
# the IGNORECASE patterns), or a cheap regex on the original text. For the IGNORECASE patterns,
# the words (case-folded) a match contains and what must follow one of them there: a prose
# word ("token", "bot") without a value after it rules the pattern out.
_HINTS: tuple[tuple[str, ...] | re.Pattern[str], ...] = (
    ("sk-",),
    ("bearer", "bot"),
    re.compile(r"\.[A-Za-z\d_\-]{6}\."),
    ("key", "authorization", "token", "password", "secret"),
)
# After a word of _HINTS in the case-folded text: the Bearer pattern's spaces and first eight
# characters (case-folded, the IGNORECASE class is ASCII), the key pattern's ":" or "=".
_AFTER: tuple[re.Pattern[str] | None, ...] = (
    None,
    re.compile(r"\s+[a-z\d._\-~+/]{8}"),
    None,
    re.compile(r"[\"']?\s*[:=]"),
)
MASK = "[REDACTED]"


def _fold(text: str) -> str:
    """`text` case-folded so that whatever an IGNORECASE pattern matches contains its literal.

    re's IGNORECASE also matches "i" with "İ" and "ı", which case-fold to other text.
    """
    return text.casefold().replace("i\u0307", "i").replace("ı", "i")


def _followed(haystack: str, words: tuple[str, ...], after: re.Pattern[str]) -> bool:
    """Whether some occurrence of one of `words` in `haystack` has `after` right behind it."""
    for word in words:
        start = haystack.find(word)
        while start >= 0:
            end = start + len(word)
            if after.match(haystack, end) is not None:
                return True
            start = haystack.find(word, end)
    return False


class _Text:
    """The text being redacted, and its case-folded form (made once, when first needed)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._folded: str | None = None

    def folded(self) -> str:
        if self._folded is None:
            self._folded = _fold(self.text)
        return self._folded

    def may_match(self, index: int) -> bool:
        """Whether _PATTERNS[index] may match: False only where it cannot."""
        pattern, hint, after = _PATTERNS[index], _HINTS[index], _AFTER[index]
        if isinstance(hint, re.Pattern):
            return hint.search(self.text) is not None
        haystack = self.folded() if pattern.flags & re.IGNORECASE else self.text
        if after is not None:
            return _followed(haystack, hint, after)
        return any(word in haystack for word in hint)


class Redactor:
    """Masks known secret values and credential-shaped strings."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by [REDACTED]."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        current = _Text(text)
        for index, pattern in enumerate(_PATTERNS):
            if not current.may_match(index):
                continue
            if "key" in pattern.groupindex:
                current = _Text(pattern.sub(lambda m: m.group("key") + MASK, current.text))
            else:
                current = _Text(pattern.sub(MASK, current.text))
        return current.text
