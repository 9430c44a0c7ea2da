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
# the IGNORECASE patterns), or a cheap regex on the original text.
_HINTS: tuple[tuple[str, ...] | re.Pattern[str], ...] = (
    ("sk-",),
    ("bearer", "bot"),
    re.compile(r"\.[A-Za-z\d_\-]{6}\."),
    ("api", "authorization", "token", "password", "secret"),
)
MASK = "[REDACTED]"


def _fold(text: str) -> str:
    """`text` case-folded so that whatever an IGNORECASE pattern matches contains its literal.

    re's IGNORECASE also matches "i" with "İ" and "ı", which case-fold to other text.
    """
    return text.casefold().replace("i\u0307", "i").replace("ı", "i")


def _may_match(
    pattern: re.Pattern[str], hint: tuple[str, ...] | re.Pattern[str], text: str
) -> bool:
    if isinstance(hint, re.Pattern):
        return hint.search(text) is not None
    haystack = _fold(text) if pattern.flags & re.IGNORECASE else text
    return any(word in haystack for word in hint)


class Redactor:
    """Masks known secret values and credential-shaped strings."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by [REDACTED]."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        for pattern, hint in zip(_PATTERNS, _HINTS, strict=True):
            if not _may_match(pattern, hint, text):
                continue
            if "key" in pattern.groupindex:
                text = pattern.sub(lambda m: m.group("key") + MASK, text)
            else:
                text = pattern.sub(MASK, text)
        return text
