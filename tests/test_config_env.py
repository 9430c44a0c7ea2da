"""An empty variable means "not set"; a bad one is named, with what it accepts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError as PydanticValidationError

from bot.config import Settings, describe_settings_errors, expected_value, load_settings
from bot.errors import ConfigurationError

REPO = Path(__file__).resolve().parents[1]
VARIABLES = [name.upper() for name in Settings.model_fields]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No PlayChat variable in the environment; the working folder is an empty temp dir."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def _defaults() -> Settings:
    return Settings(_env_file=None)  # type: ignore[call-arg]


def test_env_example_as_copied_gives_the_defaults(clean_env: pytest.MonkeyPatch) -> None:
    Path(".env").write_text((REPO / ".env.example").read_text("utf-8"), "utf-8")
    settings = load_settings()
    assert settings == _defaults()
    assert settings.mcp_config is None, "MCP_CONFIG= is not the current folder"
    assert settings.discord_token is None and settings.admin_password is None


@pytest.mark.parametrize("name", VARIABLES)
def test_every_variable_set_empty_is_its_default(clean_env: pytest.MonkeyPatch, name: str) -> None:
    Path(".env").write_text(f"{name}=\n", "utf-8")
    assert load_settings() == _defaults()
    Path(".env").unlink()
    clean_env.setenv(name, "")
    assert load_settings() == _defaults()


def test_env_example_names_every_variable_with_an_empty_or_default_value() -> None:
    # So the two tests above cover exactly what a new user copies.
    pairs = re.findall(r"^([A-Z_]+)=(.*)$", (REPO / ".env.example").read_text("utf-8"), re.M)
    assert {name for name, _ in pairs} == set(VARIABLES)


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        (
            "LLM_CONTEXT_TOKENS",
            "abc",
            "LLM_CONTEXT_TOKENS=abc is not valid: expected a whole number",
        ),
        ("DEBUG", "maybe", "DEBUG=maybe is not valid: expected true or false"),
        ("LOG_LEVEL", "loud", "LOG_LEVEL=LOUD is not valid: expected one of DEBUG, INFO, WARNING"),
        (
            "MAX_TOOL_RESULT_CHARS",
            "10",
            "MAX_TOOL_RESULT_CHARS=10 is not valid: expected a whole number, at least 1000",
        ),
        (
            "ADMIN_HEADER_TIMEOUT",
            "0",
            "ADMIN_HEADER_TIMEOUT=0 is not valid: expected a number, greater than 0",
        ),
        (
            "DISCORD_GUILD_IDS",
            "12, my server",
            'DISCORD_GUILD_IDS="12, my server" is not valid: expected numeric Discord ids',
        ),
        ("ADMIN_TRUSTED_PROXIES", "proxy", "ADMIN_TRUSTED_PROXIES=proxy is not valid: not an IP"),
    ],
)
def test_a_bad_value_is_one_sentence_naming_the_variable_and_what_it_accepts(
    clean_env: pytest.MonkeyPatch, name: str, value: str, sentence: str
) -> None:
    clean_env.setenv(name, value)
    with pytest.raises(ConfigurationError) as raised:
        load_settings()
    message = str(raised.value)
    assert message.startswith(sentence), message
    assert message.endswith("; fix it in .env or the environment.")
    assert "\n" not in message and "pydantic" not in message and "type=" not in message
    assert raised.value.exit_code == 2


@pytest.mark.parametrize(
    ("name", "refused", "accepted", "accepts"),
    [
        (
            "LLM_CONTEXT_TOKENS",
            ["-5", "0", "511"],
            "512",
            "a whole number, at least 512 and at most 1048576",
        ),
        ("USER_COOLDOWN_SECONDS", ["-3", "3601"], "0", "a number, at least 0 and at most 3600"),
        ("LOCAL_KB_MIN_SCORE", ["7", "1.01"], "1", "a number, at least -1 and at most 1"),
        (
            "MEMORY_SUMMARIZE_THRESHOLD",
            ["1", "3"],
            "4",
            "a whole number, at least 4 and at most 1000",
        ),
        ("STREAM_EDIT_INTERVAL", ["0", "0.19"], "0.2", "a number, at least 0.2 and at most 30"),
    ],
)
def test_a_value_out_of_range_names_the_variable_and_its_bounds(
    clean_env: pytest.MonkeyPatch, name: str, refused: list[str], accepted: str, accepts: str
) -> None:
    for value in refused:
        clean_env.setenv(name, value)
        with pytest.raises(ConfigurationError) as raised:
            load_settings()
        assert str(raised.value) == (
            f"{name}={value} is not valid: expected {accepts}; fix it in .env or the environment."
        )
    clean_env.setenv(name, accepted)
    assert getattr(load_settings(), name.lower()) == float(accepted)


def test_every_bad_variable_gets_its_own_line(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LLM_TIMEOUT", "soon")
    clean_env.setenv("ADMIN_PORT", "http")
    with pytest.raises(ConfigurationError) as raised:
        load_settings()
    lines = str(raised.value).splitlines()
    assert [line.split("=", 1)[0] for line in lines] == ["LLM_TIMEOUT", "ADMIN_PORT"]


def test_a_secret_is_never_echoed(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(PydanticValidationError) as raised:
        Settings(_env_file=None, admin_token=["sk-not-a-string-secret"])  # type: ignore[call-arg]
    lines = describe_settings_errors(raised.value)
    assert lines == ["ADMIN_TOKEN is not valid: expected text; fix it in .env or the environment."]


def test_expected_values_come_from_the_field_types_and_bounds() -> None:
    assert expected_value("language") == "one of " + ", ".join(
        Settings.model_fields["language"].annotation.__args__  # type: ignore[union-attr]
    )
    assert expected_value("mcp_config") == "a file path"
    assert expected_value("discord_allow_dms") == "true or false"
    assert (
        expected_value("pagination_token_ttl") == "a whole number, at least 0 and at most 2592000"
    )
