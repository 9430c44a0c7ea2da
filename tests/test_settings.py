"""Settings: environment parsing, runtime overrides stored in app_settings, languages."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import asdict, fields
from pathlib import Path
from typing import get_args, get_origin

import pytest

from bot.config import (
    InvalidSettings,
    RuntimeSettings,
    Settings,
    is_ollama_model,
    model_backend,
    model_provider,
)
from bot.errors import ValidationError
from bot.prompts import available_languages, prompts_for
from bot.prompts.ui_text import UiCatalogueError, UiText, parse_ui_text, ui_text
from bot.store.engine.database import Database
from bot.store.repos.app_settings import AppSettingsRepository

REPO = Path(__file__).resolve().parents[1]


def test_env_lists_and_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_GUILD_IDS", "1, 2,3")
    monkeypatch.setenv("LLM_MODEL", "ollama_chat/llama3.1")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.discord_guild_ids == [1, 2, 3]
    assert settings.uses_ollama
    assert is_ollama_model("ollama/x") and not is_ollama_model("openai/gpt-4o")


def test_model_string_names_backend_and_provider() -> None:
    cases = {
        "ollama/qwen3:8b": ("ollama", "ollama"),
        "ollama_chat/llama3.1": ("ollama", "ollama"),
        "anthropic/claude-3-5-haiku": ("litellm", "anthropic"),
        "gpt-4o-mini": ("litellm", "openai"),
    }
    assert {m: (model_backend(m), model_provider(m)) for m in cases} == cases


async def test_overrides_persist_and_mask_secrets(suite_database_url: str) -> None:
    db = await Database.connect(suite_database_url)
    base = Settings(_env_file=None, llm_api_key="sk-original-key-1234")  # type: ignore[call-arg]
    runtime = RuntimeSettings(base, AppSettingsRepository(db))
    seen: list[frozenset[str]] = []
    runtime.subscribe(lambda settings, keys: seen.append(keys))
    await runtime.update({"llm_model": "openai/gpt-4o-mini", "llm_api_key": "sk-new-secret-9876"})
    assert runtime().llm_model == "openai/gpt-4o-mini"
    assert runtime().secret("llm_api_key") == "sk-new-secret-9876"
    assert seen == [frozenset({"llm_model", "llm_api_key"})]
    view = runtime.public_view()
    assert view["llm_api_key"] == {"set": True, "last4": "9876"}
    assert "sk-new-secret-9876" not in repr(view)

    reloaded = RuntimeSettings(base, AppSettingsRepository(db))
    await reloaded.load()
    assert reloaded().llm_model == "openai/gpt-4o-mini"

    await reloaded.update({"llm_model": None})
    assert reloaded().llm_model == base.llm_model
    with pytest.raises(ValidationError):
        await reloaded.update({"db_path": "/tmp/other.db"})
    with pytest.raises(ValidationError):
        await reloaded.update({"llm_context_tokens": "lots"})
    await db.close()


async def test_runtime_changes_obey_the_fields_bounds_and_save_all_or_nothing(
    suite_database_url: str,
) -> None:
    db = await Database.connect(suite_database_url)
    repo = AppSettingsRepository(db)
    runtime = RuntimeSettings(Settings(_env_file=None), repo)  # type: ignore[call-arg]
    seen: list[frozenset[str]] = []
    runtime.subscribe(lambda settings, keys: seen.append(keys))
    with pytest.raises(InvalidSettings) as refused:
        await runtime.update(
            {"llm_context_tokens": -5, "language": "en", "stream_edit_interval": 0}
        )
    assert refused.value.problems == {
        "llm_context_tokens": "llm_context_tokens must be a whole number, at least 512 and at "
        "most 1048576.",
        "stream_edit_interval": "stream_edit_interval must be a number, at least 0.2 and at "
        "most 30.",
    }
    assert await repo.all() == {} and runtime.overrides() == {} and seen == []

    with pytest.raises(InvalidSettings, match="db_path cannot be changed at runtime"):
        await runtime.update({"db_path": None})
    await runtime.update({"memory_summarize_threshold": 4, "local_kb_min_score": 1})
    assert (runtime().memory_summarize_threshold, runtime().local_kb_min_score) == (4, 1.0)
    await db.close()


async def test_a_stored_override_out_of_range_is_skipped_at_start(
    suite_database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = await Database.connect(suite_database_url)
    repo = AppSettingsRepository(db)
    # Saved by an older version that did not check bounds.
    await repo.set_many({"llm_context_tokens": -5, "user_cooldown_seconds": 10})
    runtime = RuntimeSettings(Settings(_env_file=None), repo)  # type: ignore[call-arg]
    await runtime.load()
    assert runtime().llm_context_tokens == 16384
    assert runtime().user_cooldown_seconds == 10
    assert "ignoring stored setting llm_context_tokens: llm_context_tokens must be" in caplog.text
    await db.close()


def test_every_setting_has_a_description_and_every_number_bounds() -> None:
    for name, field in Settings.model_fields.items():
        assert field.description and field.description.endswith((".", ")")), name
        # int, float, or one of them | None (lists of ids are not numbers to bound).
        kinds = {
            field.annotation,
            *(() if get_origin(field.annotation) is list else get_args(field.annotation)),
        }
        if kinds & {int, float}:
            bounds = {
                attr
                for item in field.metadata
                for attr in ("ge", "gt", "le", "lt")
                if getattr(item, attr, None) is not None
            }
            assert bounds & {"ge", "gt"} and bounds & {"le", "lt"}, name


def test_the_default_language_is_english_and_its_prompt_answers_in_the_users_language() -> None:
    assert Settings(_env_file=None).language == "en"  # type: ignore[call-arg]
    assert "Answer in the language the user writes in." in prompts_for("en")["system"]


def test_every_setting_is_documented_in_env_example() -> None:
    documented = set(
        re.findall(r"^#?\s*([A-Z_]+)=", (REPO / ".env.example").read_text("utf-8"), re.M)
    )
    assert {name.upper() for name in Settings.model_fields} == documented


# --------------------------------------------------------------------------- languages and texts

PROMPTS_DIR = REPO / "bot" / "prompts"
_FIELD_RE = re.compile(r"\{(\w*)[^{}]*\}")


def _catalogue(language: str) -> dict[str, object]:
    data = json.loads((PROMPTS_DIR / "ui" / f"{language}.json").read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_language_setting_offers_exactly_the_languages_with_files() -> None:
    offered = set(get_args(Settings.model_fields["language"].annotation))
    assert available_languages() == offered == {"en", "ja"}
    for language in offered:
        assert (PROMPTS_DIR / f"{language}.json").is_file()
        assert (PROMPTS_DIR / "ui" / f"{language}.json").is_file()


def test_every_ui_catalogue_has_the_same_keys_and_placeholders() -> None:
    expected = {field.name for field in fields(UiText)}
    english = _catalogue("en")
    assert set(english) == expected
    for language in available_languages():
        catalogue = _catalogue(language)
        assert set(catalogue) == expected, language
        for key, text in catalogue.items():
            assert isinstance(text, str) and text, (language, key)
            placeholders = set(_FIELD_RE.findall(text))
            assert placeholders == set(_FIELD_RE.findall(str(english[key]))), (language, key)
        loaded = ui_text(language)
        assert asdict(loaded) == catalogue


def test_every_prompt_file_has_the_same_keys_and_placeholders() -> None:
    english = json.loads((PROMPTS_DIR / "en.json").read_text("utf-8"))
    for language in available_languages():
        prompts = json.loads((PROMPTS_DIR / f"{language}.json").read_text("utf-8"))
        assert set(prompts) == set(english), language
        for key, text in prompts.items():
            placeholders = set(_FIELD_RE.findall(text))
            assert placeholders == set(_FIELD_RE.findall(english[key])), (language, key)


def test_a_catalogue_with_missing_unknown_or_non_text_entries_is_refused() -> None:
    good = _catalogue("en")
    assert parse_ui_text(dict(good)) == ui_text("en")
    missing = {key: value for key, value in good.items() if key != "cooldown"}
    with pytest.raises(UiCatalogueError, match="missing cooldown"):
        parse_ui_text(missing, "ui/xx.json")
    with pytest.raises(UiCatalogueError, match="unknown cooldwon"):
        parse_ui_text({**good, "cooldwon": "typo"}, "ui/xx.json")
    with pytest.raises(UiCatalogueError, match="not a string: sources"):
        parse_ui_text({**good, "sources": ["Sources"]}, "ui/xx.json")
    with pytest.raises(UiCatalogueError, match=r"ui/xx\.json: expected a JSON object"):
        parse_ui_text(["not", "an", "object"], "ui/xx.json")


def test_unknown_languages_fall_back_to_english() -> None:
    assert ui_text("fr") == ui_text("en")
    assert ui_text("ja").access_denied != ui_text("en").access_denied
    assert prompts_for("fr")["system"] == prompts_for("en")["system"]


def test_the_language_files_ship_with_the_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["bot"]
    shipped = {path for pattern in patterns for path in (REPO / "bot").glob(pattern)}
    assert set(PROMPTS_DIR.rglob("*.json")) <= shipped
