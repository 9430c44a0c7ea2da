"""The languages PlayChat speaks: the one declaration every setting, schema and check reads."""

from __future__ import annotations

from typing import Literal, get_args

# Adding a language: its code here, then bot/prompts/<code>.json and bot/prompts/ui/<code>.json.
Language = Literal["en", "ja"]
LANGUAGES: tuple[Language, ...] = get_args(Language)
FALLBACK_LANGUAGE: Language = "en"


def known_language(value: object) -> Language | None:
    """`value` when it is a declared language code, else None."""
    for language in LANGUAGES:
        if value == language:
            return language
    return None
