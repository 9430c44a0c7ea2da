"""Languages are declared once (bot/prompts/languages.py); each has complete prompt and UI files,
and every setting or schema that takes a language accepts exactly the declared ones."""

from __future__ import annotations

import json
from dataclasses import fields
from importlib import resources
from typing import Any

import pytest

from admin_api.schemas.topics import TopicUpdateIn
from bot.config import Settings
from bot.prompts import available_languages, prompts_for
from bot.prompts.languages import FALLBACK_LANGUAGE, LANGUAGES, known_language
from bot.prompts.ui_text import UiText, load_ui_text


def catalogue(*parts: str) -> dict[str, Any]:
    """One JSON file under bot/prompts, parsed."""
    text = resources.files("bot.prompts").joinpath(*parts).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def test_the_declared_languages_are_the_available_ones() -> None:
    assert FALLBACK_LANGUAGE in LANGUAGES
    assert available_languages() == set(LANGUAGES), "a language has files but no declaration"


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_has_every_prompt_and_ui_text(language: str) -> None:
    prompts = catalogue(f"{language}.json")
    assert set(prompts) == set(catalogue(f"{FALLBACK_LANGUAGE}.json"))
    assert all(isinstance(text, str) and text.strip() for text in prompts.values())
    ui = catalogue("ui", f"{language}.json")
    assert set(ui) == {field.name for field in fields(UiText)}
    assert load_ui_text(language).knowledge_saving.format(query="x")
    assert prompts_for(language)["language_name"] == prompts["language_name"]


def test_every_language_field_accepts_exactly_the_declared_languages() -> None:
    setting = Settings.model_json_schema()["properties"]["language"]
    assert setting["enum"] == list(LANGUAGES)
    topic = TopicUpdateIn.model_json_schema()["properties"]["language"]["anyOf"][0]
    assert topic["enum"] == list(LANGUAGES)
    assert [known_language(code) for code in (*LANGUAGES, "fr", "", None)] == [
        *LANGUAGES,
        None,
        None,
        None,
    ]
