"""Settings: environment parsing and runtime overrides stored in app_settings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.config import RuntimeSettings, Settings, is_ollama_model
from bot.errors import ValidationError
from bot.store.app_settings import AppSettingsRepository
from bot.store.db import Database

REPO = Path(__file__).resolve().parents[1]


def test_env_lists_and_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISCORD_GUILD_IDS", "1, 2,3")
    monkeypatch.setenv("LLM_MODEL", "ollama_chat/llama3.1")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.discord_guild_ids == [1, 2, 3]
    assert settings.uses_ollama
    assert is_ollama_model("ollama/x") and not is_ollama_model("openai/gpt-4o")


async def test_overrides_persist_and_mask_secrets(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "s.db")
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


def test_every_setting_is_documented_in_env_example() -> None:
    documented = set(
        re.findall(r"^#?\s*([A-Z_]+)=", (REPO / ".env.example").read_text("utf-8"), re.M)
    )
    assert {name.upper() for name in Settings.model_fields} == documented
