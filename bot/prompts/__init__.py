"""Texts per language: prompts for the model (<language>.json) and UI texts (ui/<language>.json).

The languages are declared once, in bot/prompts/languages.py; adding one means adding its code
there and these two files.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from bot.prompts.languages import FALLBACK_LANGUAGE

__all__ = ["FALLBACK_LANGUAGE", "Prompts", "available_languages", "prompts_for"]


class Prompts:
    """The prompt texts of one language; missing keys fall back to English."""

    def __init__(self, texts: dict[str, str], fallback: dict[str, str]) -> None:
        self._texts = texts
        self._fallback = fallback

    def __getitem__(self, key: str) -> str:
        return self._texts.get(key) or self._fallback[key]

    def format(self, key: str, **values: object) -> str:
        """The prompt `key` with `{name}` placeholders filled."""
        return self[key].format(**values)


def _json_stems(folder: str = "") -> frozenset[str]:
    root = resources.files("bot.prompts")
    directory = root.joinpath(folder) if folder else root
    return frozenset(
        entry.name.removesuffix(".json")
        for entry in directory.iterdir()
        if entry.is_file() and entry.name.endswith(".json")
    )


@cache
def available_languages() -> frozenset[str]:
    """Languages with both a prompt file and a UI-text catalogue."""
    return _json_stems() & _json_stems("ui")


@cache
def _load(language: str) -> dict[str, str]:
    data = resources.files("bot.prompts").joinpath(f"{language}.json").read_text("utf-8")
    texts: dict[str, str] = json.loads(data)
    return texts


def prompts_for(language: str) -> Prompts:
    """Prompts for `language`; languages without files get English."""
    name = language if language in available_languages() else FALLBACK_LANGUAGE
    return Prompts(_load(name), _load(FALLBACK_LANGUAGE))
