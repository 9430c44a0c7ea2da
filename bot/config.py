"""Typed settings from the environment and `.env`; the settings in effect with runtime overrides."""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Callable
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import Field, SecretStr, TypeAdapter, field_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.errors import ConfigurationError, ValidationError
from bot.store.dialect import dialect_of, sqlite_url
from bot.store.spaces import DEFAULT_LOCAL_NAME, LOCAL_NAME_PATTERN, local_space

if TYPE_CHECKING:
    from bot.store.app_settings import AppSettingsRepository

log = logging.getLogger(__name__)

OLLAMA_PREFIXES = ("ollama/", "ollama_chat/")

# Settings that may be changed at runtime (admin API / slash commands) without a restart.
RUNTIME_KEYS = frozenset(
    {
        "llm_model",
        "llm_api_base",
        "llm_api_key",
        "embed_model",
        "language",
        "llm_context_tokens",
        "tagging_mode",
        "knowledge_context_limit",
        "memory_summarize_threshold",
        "user_cooldown_seconds",
        "stream_edit_interval",
        "system_prompt_extra",
        "web_search_max_results",
        "scrape_max_chars",
        "fetch_max_chars",
        "fetch_max_results",
        "local_kb_top_k",
        "local_kb_min_score",
    }
)
IdList = Annotated[list[int], NoDecode]
SECRET_KEYS = frozenset(
    {"llm_api_key", "discord_token", "admin_password", "admin_token", "database_url"}
)


class Settings(BaseSettings):
    """Every setting of PlayChat; names match the environment variables (upper case)."""

    # env_ignore_empty: `NAME=` (as in .env.example) means "not set", so the default applies.
    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        frozen=True,
        env_ignore_empty=True,
    )

    discord_token: SecretStr | None = None
    discord_guild_ids: IdList = Field(default_factory=list)
    discord_allow_dms: bool = False
    discord_allowed_channel_ids: IdList = Field(default_factory=list)
    discord_denied_channel_ids: IdList = Field(default_factory=list)
    discord_allowed_user_ids: IdList = Field(default_factory=list)
    discord_denied_user_ids: IdList = Field(default_factory=list)
    discord_allowed_role_ids: IdList = Field(default_factory=list)
    discord_denied_role_ids: IdList = Field(default_factory=list)
    discord_admin_role_ids: IdList = Field(default_factory=list)
    owner_user_ids: IdList = Field(default_factory=list)
    space_retention_days: float | None = Field(default=None, ge=0)
    user_cooldown_seconds: float = 3.0
    user_max_concurrent_turns: int = Field(default=2, ge=1)
    stream_edit_interval: float = 1.2

    llm_model: str = "ollama/qwen3:8b"
    llm_api_base: str = "http://localhost:11434"
    llm_api_key: SecretStr | None = None
    llm_timeout: float = 120.0
    turn_timeout: float = Field(default=300.0, gt=0)
    max_answer_chars: int = Field(default=20_000, ge=100)
    llm_context_tokens: int = 16384
    llm_vision: bool = False
    embed_model: str = ""
    system_prompt_extra: str = ""

    db_path: Path = Path("data/playchat.db")
    # sqlite:///FILE or postgresql://USER:PASSWORD@HOST/DB; unset: sqlite:/// + DB_PATH.
    database_url: SecretStr = SecretStr("")
    kb_dir: Path = Path("knowledge_base")
    language: Literal["ja", "en"] = "ja"
    local_space: Annotated[str, Field(pattern=LOCAL_NAME_PATTERN)] = DEFAULT_LOCAL_NAME

    memory_summarize_threshold: int = 20
    knowledge_context_limit: int = 15
    session_notes_content_limit: int = 8000
    local_kb_top_k: int = 3
    local_kb_min_score: float = 0.75
    tagging_mode: Literal["keywords", "llm"] = "keywords"

    web_search_max_results: int = 5
    web_search_backend: str = "duckduckgo"
    scrape_max_chars: int = 4000
    fetch_max_chars: int = 8000
    fetch_max_results: int = 3
    max_fetch_mb: int = 10
    max_pdf_pages: int = 25
    fetch_timeout: float = 20.0
    max_image_pixels: int = 16_000_000
    max_tool_result_chars: int = Field(default=6000, ge=1000)
    pagination_token_ttl: int = Field(default=3600, ge=0)
    parser_workers: int = Field(default=2, ge=1, le=8)

    mcp_config: Path | None = None
    mcp_call_timeout: float = Field(default=60.0, gt=0)

    admin_host: str = "127.0.0.1"
    admin_port: int = 8765
    admin_password: SecretStr | None = None
    admin_token: SecretStr | None = None
    admin_enabled: bool = True
    admin_allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    admin_header_timeout: float = Field(default=10.0, gt=0)
    admin_body_timeout: float = Field(default=60.0, gt=0)
    admin_keepalive_timeout: float = Field(default=15.0, gt=0)
    admin_max_connections: int = Field(default=100, ge=1)
    admin_trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)

    readiness_interval: float = Field(
        default=60.0,
        ge=10,
        le=3600,
        description="Seconds between readiness checks (model, embeddings, MCP, scheduler).",
    )

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    debug: bool = False

    @field_validator(
        "discord_guild_ids",
        "discord_allowed_channel_ids",
        "discord_denied_channel_ids",
        "discord_allowed_user_ids",
        "discord_denied_user_ids",
        "discord_allowed_role_ids",
        "discord_denied_role_ids",
        "discord_admin_role_ids",
        "owner_user_ids",
        mode="before",
    )
    @classmethod
    def _split_ids(cls, value: Any) -> Any:
        """Accept comma-separated ids as well as JSON lists."""
        if isinstance(value, int):
            return [value]
        if isinstance(value, str):
            parts = [part for part in value.replace(" ", "").split(",") if part]
            if not all(part.isdigit() for part in parts):
                raise ValueError("expected numeric Discord ids separated by commas")
            return [int(part) for part in parts]
        return value

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: SecretStr) -> SecretStr:
        """Only sqlite:/// and postgresql:// URLs (the error names both)."""
        if value.get_secret_value():
            dialect_of(value.get_secret_value())
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        """Accept log level names in any case."""
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("space_retention_days", mode="before")
    @classmethod
    def _empty_is_keep(cls, value: Any) -> Any:
        """An empty SPACE_RETENTION_DAYS means: keep a left server's space."""
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("admin_allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        """Accept comma-separated host names."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("admin_trusted_proxies", mode="before")
    @classmethod
    def _split_networks(cls, value: Any) -> Any:
        """Accept comma-separated IP addresses and CIDR networks; store them normalised."""
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, list):
            return value
        networks = []
        for part in value:
            try:
                networks.append(str(ipaddress.ip_network(str(part).strip())))
            except ValueError as exc:
                raise ValueError(f"not an IP address or CIDR network: {part!r} ({exc})") from exc
        return networks

    @property
    def local_space_id(self) -> str:
        """The space id of the terminal chat and the admin API's chat (`local:<name>`)."""
        return local_space(self.local_space)

    @property
    def uses_ollama(self) -> bool:
        """True when the chat model runs on the native Ollama backend."""
        return is_ollama_model(self.llm_model)

    def secret(self, name: str) -> str:
        """The plain value of a secret setting, or '' when unset."""
        value = getattr(self, name)
        return value.get_secret_value() if isinstance(value, SecretStr) else ""

    def database(self) -> str:
        """The DATABASE_URL in effect (the SQLite file at DB_PATH unless one is set)."""
        return self.secret("database_url") or sqlite_url(self.db_path)

    def secret_values(self) -> list[str]:
        """The plain values of the secret settings that are set (to mask them in output)."""
        return [value for name in sorted(SECRET_KEYS) if (value := self.secret(name))]


def load_settings() -> Settings:
    """Settings from the environment and `.env`; a ConfigurationError names each bad variable."""
    try:
        return Settings()
    except PydanticValidationError as exc:
        raise ConfigurationError("\n".join(describe_settings_errors(exc))) from exc


def describe_settings_errors(exc: PydanticValidationError) -> list[str]:
    """One sentence per invalid setting: the variable as typed, its value, what it accepts."""
    lines: list[str] = []
    seen: set[str] = set()
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else ""
        if name in seen or name not in Settings.model_fields:
            continue
        seen.add(name)
        variable = name.upper()
        shown = "" if name in SECRET_KEYS else f"={_shown(error.get('input'))}"
        if error["type"] == "value_error":
            reason = str(error["msg"]).removeprefix("Value error, ")
        else:
            reason = f"expected {expected_value(name)}"
        lines.append(
            f"{variable}{shown} is not valid: {reason}; fix it in .env or the environment."
        )
    return lines or [f"Invalid configuration: {exc.error_count()} error(s)."]


def expected_value(name: str) -> str:
    """What a setting accepts, in words: its type and bounds ("a whole number, at least 1")."""
    field = Settings.model_fields[name]
    return _kind(field.annotation) + _bounds(field.metadata)


def _shown(value: Any) -> str:
    text = str(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return (
        json.dumps(text, ensure_ascii=False) if not text or any(c.isspace() for c in text) else text
    )


def _kind(annotation: Any) -> str:
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        annotation = args[0]
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(str(arg) for arg in get_args(annotation))
    kinds: dict[Any, str] = {
        bool: "true or false",
        int: "a whole number",
        float: "a number",
        Path: "a file path",
    }
    if annotation in kinds:
        return str(kinds[annotation])
    if get_origin(annotation) is list:
        return "a comma-separated list"
    return "text"


def _bounds(metadata: list[Any]) -> str:
    parts = []
    for item in metadata:
        for attr, words in (
            ("ge", "at least"),
            ("gt", "greater than"),
            ("le", "at most"),
            ("lt", "less than"),
        ):
            bound = getattr(item, attr, None)
            if bound is not None:
                parts.append(f"{words} {bound}")
    return (", " + " and ".join(parts)) if parts else ""


def is_ollama_model(model: str) -> bool:
    """`ollama/` and `ollama_chat/` prefixes select the native Ollama backend."""
    return model.startswith(OLLAMA_PREFIXES)


def strip_ollama_prefix(model: str) -> str:
    """Model name as the Ollama server knows it."""
    for prefix in OLLAMA_PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model


def mask_secret(value: str) -> dict[str, Any]:
    """A secret as the outside world may see it: whether it is set and its last 4 characters."""
    return {"set": bool(value), "last4": value[-4:] if len(value) >= 8 else ""}


Listener = Callable[[Settings, frozenset[str]], None]


def _adapter(key: str) -> TypeAdapter[Any]:
    annotation: Any = Settings.model_fields[key].annotation
    return TypeAdapter(annotation)


class RuntimeSettings:
    """Holds the current Settings; overrides are validated, stored and applied at once."""

    def __init__(self, base: Settings, repo: AppSettingsRepository | None = None) -> None:
        self._base = base
        self._repo = repo
        self._overrides: dict[str, Any] = {}
        self._current = base
        self._listeners: list[Listener] = []

    def __call__(self) -> Settings:
        """The settings in effect right now."""
        return self._current

    @property
    def base(self) -> Settings:
        """Settings from the environment, before overrides."""
        return self._base

    def overrides(self) -> dict[str, Any]:
        """Runtime overrides currently applied (plain values)."""
        return dict(self._overrides)

    def subscribe(self, listener: Listener) -> None:
        """Call `listener(settings, changed_keys)` after every change."""
        self._listeners.append(listener)

    async def load(self) -> None:
        """Apply the overrides stored in the database (unknown or invalid ones are skipped)."""
        if self._repo is None:
            return
        stored = await self._repo.all()
        valid: dict[str, Any] = {}
        for key, value in stored.items():
            try:
                valid[key] = self._validate(key, value)
            except ValidationError as exc:
                log.warning("ignoring stored setting %s: %s", key, exc)
        self._overrides = {key: self._plain(value) for key, value in valid.items()}
        self._rebuild()

    async def update(self, changes: dict[str, Any]) -> frozenset[str]:
        """Validate and store overrides (None resets a key to its environment value)."""
        parsed: dict[str, Any] = {}
        for key, value in changes.items():
            parsed[key] = None if value is None else self._validate(key, value)
        if self._repo is not None:
            await self._repo.set_many({key: self._plain(value) for key, value in parsed.items()})
        for key, value in parsed.items():
            if value is None:
                self._overrides.pop(key, None)
            else:
                self._overrides[key] = self._plain(value)
        self._rebuild()
        changed = frozenset(parsed)
        for listener in self._listeners:
            listener(self._current, changed)
        log.info("settings changed: %s", ", ".join(sorted(changed)))
        return changed

    def public_view(self) -> dict[str, Any]:
        """Every runtime-editable setting with secrets masked as {set, last4}."""
        view: dict[str, Any] = {}
        for key in sorted(RUNTIME_KEYS):
            value = getattr(self._current, key)
            if key in SECRET_KEYS:
                view[key] = mask_secret(self._current.secret(key))
            else:
                view[key] = value
        return view

    def _validate(self, key: str, value: Any) -> Any:
        if key not in RUNTIME_KEYS:
            raise ValidationError(f"{key} cannot be changed at runtime.")
        try:
            return _adapter(key).validate_python(value)
        except PydanticValidationError as exc:
            raise ValidationError(f"Invalid value for {key}: {exc.errors()[0]['msg']}") from exc

    @staticmethod
    def _plain(value: Any) -> Any:
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    def _rebuild(self) -> None:
        updates = {key: self._validate(key, value) for key, value in self._overrides.items()}
        self._current = self._base.model_copy(update=updates)
