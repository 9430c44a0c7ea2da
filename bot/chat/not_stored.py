"""Why a user's message could not be stored, in words for the person who sent it."""

from __future__ import annotations

from bot.prompts import Prompts

# Fragments of the engines' error texts (SQLite, PostgreSQL) and the reason each stands for.
_REASONS = (
    (("readonly", "read-only", "read only"), "store_read_only"),
    (("locked", "busy", "could not obtain lock", "lock timeout"), "store_busy"),
    (("disk is full", "no space left", "disk full", "quota"), "store_full"),
)


def store_failure_reason(exc: BaseException, prompts: Prompts) -> str:
    """A short, safe reason for a failed write (never the database's own text)."""
    text = str(exc).lower()
    for fragments, key in _REASONS:
        if any(fragment in text for fragment in fragments):
            return prompts[key]
    return prompts["store_refused"]
