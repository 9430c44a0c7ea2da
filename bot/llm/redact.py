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
MASK = "[REDACTED]"


class Redactor:
    """Masks known secret values and credential-shaped strings."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by [REDACTED]."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        for pattern in _PATTERNS:
            if "key" in pattern.groupindex:
                text = pattern.sub(lambda m: m.group("key") + MASK, text)
            else:
                text = pattern.sub(MASK, text)
        return text
