"""Prompt texts per language (ja.json, en.json), loaded once."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Literal

Language = Literal["ja", "en"]


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


@cache
def _load(language: str) -> dict[str, str]:
    data = resources.files("bot.prompts").joinpath(f"{language}.json").read_text("utf-8")
    texts: dict[str, str] = json.loads(data)
    return texts


def prompts_for(language: str) -> Prompts:
    """Prompts for `language` ("ja" or "en"); unknown languages get English."""
    name = language if language in ("ja", "en") else "en"
    return Prompts(_load(name), _load("en"))
