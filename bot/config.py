"""Typed settings from the environment and `.env`; the settings in effect with runtime overrides."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import time
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Protocol, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    create_model,
    field_validator,
)
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.errors import ConfigurationError, ValidationError
from bot.prompts.languages import Language
from bot.store.engine.dialect import dialect_of, sqlite_url
from bot.store.shards import ShardFilter
from bot.store.spaces import DEFAULT_LOCAL_NAME, LOCAL_NAME_PATTERN, local_space

log = logging.getLogger(__name__)

OLLAMA_PREFIXES = ("ollama/", "ollama_chat/")


@dataclass(frozen=True)
class RuntimeEditable:
    """Marks a Settings field the admin API and slash commands may change without a restart."""


# Written as `Annotated[T, RUNTIME]` on the field; RUNTIME_KEYS is derived from these marks.
RUNTIME = RuntimeEditable()
IdList = Annotated[list[int], NoDecode]

_QUIET_WINDOW = re.compile(r"^\s*(\d{1,2})(?::(\d{2}))?\s*-\s*(\d{1,2})(?::(\d{2}))?\s*$")
QUIET_HOURS_HINT = 'hours "START-END" such as "23-7" or "22:30-06:00" (24-hour clock)'


@dataclass(frozen=True)
class QuietHours:
    """From `start` (included) to `end` (excluded), wrapping midnight when start > end."""

    start: time
    end: time

    def covers(self, local: time) -> bool:
        """Whether the local time of day `local` falls in the window."""
        if self.start < self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end

    def __str__(self) -> str:
        return f"{self.start:%H:%M}–{self.end:%H:%M}"


def _clock(hours: str, minutes: str | None, value: str) -> time:
    hour, minute = int(hours), int(minutes or 0)
    if hour == 24 and minute == 0:
        return time(0)  # "22-24": until midnight
    if hour > 23 or minute > 59:
        raise ValueError(f"{value!r} is not a time window: {QUIET_HOURS_HINT}")
    return time(hour, minute)


def parse_quiet_hours(value: str) -> QuietHours | None:
    """'23-7' → 23:00 to 07:00 (wrapping midnight); '' → None; ValueError when malformed."""
    if not value.strip():
        return None
    match = _QUIET_WINDOW.fullmatch(value)
    if match is None:
        raise ValueError(f"{value!r} is not a time window: {QUIET_HOURS_HINT}")
    start = _clock(match[1], match[2], value)
    end = _clock(match[3], match[4], value)
    if start == end:
        raise ValueError(f"{value!r} starts and ends at the same time: {QUIET_HOURS_HINT}")
    return QuietHours(start, end)


def _valid_quiet_hours(value: str) -> str:
    """`value` stripped, when parse_quiet_hours understands it (it raises the message shown)."""
    parse_quiet_hours(value)
    return value.strip()


# A field type, not a Settings validator, so runtime changes are checked the same way.
QuietHoursText = Annotated[str, AfterValidator(_valid_quiet_hours)]


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

    discord_token: SecretStr | None = Field(
        default=None,
        description="Bot token from the Discord developer portal (secret).",
    )
    discord_guild_ids: IdList = Field(
        default_factory=list,
        description="Server ids for instant slash-command sync; empty = global sync (up to 1 h).",
    )
    discord_allow_dms: bool = Field(default=False, description="Answer direct messages too.")
    discord_allowed_channel_ids: IdList = Field(
        default_factory=list, description="Channels the bot answers in; empty = every channel."
    )
    discord_denied_channel_ids: IdList = Field(
        default_factory=list, description="Channels the bot never answers in."
    )
    discord_allowed_user_ids: IdList = Field(
        default_factory=list, description="Users the bot answers; empty = everyone."
    )
    discord_denied_user_ids: IdList = Field(
        default_factory=list, description="Users the bot never answers."
    )
    discord_allowed_role_ids: IdList = Field(
        default_factory=list, description="Roles whose members the bot answers; empty = all."
    )
    discord_denied_role_ids: IdList = Field(
        default_factory=list, description="Roles whose members the bot never answers."
    )
    discord_admin_role_ids: IdList = Field(
        default_factory=list,
        description="Roles whose members may use admin commands (besides Manage Server).",
    )
    owner_user_ids: IdList = Field(
        default_factory=list,
        description="The bot's owners: admin commands pass for them in every server and DM.",
    )
    shard_count: int | None = Field(
        default=None,
        ge=1,
        le=65_536,
        description="Discord gateway shards of the whole bot; set to run this process on a "
        "subset of them (SHARD_IDS). Unset: one unsharded connection.",
    )
    shard_ids: IdList = Field(
        default_factory=list,
        description="The shards this process serves, comma-separated, each below SHARD_COUNT "
        "(e.g. 0,1). Empty: every shard of SHARD_COUNT.",
    )
    settings_sync_interval: float = Field(
        default=2.0,
        ge=0.05,
        le=60,
        description="Seconds between checks for runtime settings changed by another process "
        "on the same SQLite database (PostgreSQL tells the processes at once).",
    )
    space_retention_days: float | None = Field(
        default=None,
        ge=0,
        le=3650,
        description="Days after the bot leaves a server until that server's data is purged; "
        "empty = keep it.",
    )
    user_cooldown_seconds: Annotated[float, RUNTIME] = Field(
        default=3.0,
        ge=0,
        le=3600,
        description="Seconds a user must wait between messages to the bot; 0 = no wait.",
    )
    user_max_concurrent_turns: int = Field(
        default=2,
        ge=1,
        le=100,
        description="Turns one user may have running or waiting at once, across all threads.",
    )
    member_daily_tokens: Annotated[int, RUNTIME] = Field(
        default=0,
        ge=0,
        le=1_000_000_000,
        description="Tokens (prompt + completion) one member's turns may use per day in one "
        "server; 0 = unlimited. A day is the server's (its time zone, else UTC).",
    )
    server_daily_tokens: Annotated[int, RUNTIME] = Field(
        default=0,
        ge=0,
        le=1_000_000_000,
        description="Tokens (prompt + completion) all turns in one server (or DM, or the local "
        "chat) may use per day; 0 = unlimited.",
    )
    burst_wait_seconds: Annotated[float, RUNTIME] = Field(
        default=8.0,
        ge=0,
        le=8,
        description="Seconds a message waits at most while its author is typing more, so that "
        "their next messages join its turn; 0 = every message is a turn of its own.",
    )
    topic_quiet_hours: Annotated[QuietHoursText, RUNTIME] = Field(
        default="",
        max_length=20,
        description="Hours in which the bot starts no conversation (idle chats and scheduled "
        'topic posts), e.g. "23-7" (wraps midnight) or "22:30-06:00", in each server\'s time '
        "zone (else the topic channel's); empty = none.",
    )
    topic_reply_window_minutes: Annotated[int, RUNTIME] = Field(
        default=30,
        ge=1,
        le=24 * 60,
        description="Minutes after a topic opener in which a person writing in its channel (or "
        "a thread of it) counts as an answer.",
    )
    topic_backoff_max_minutes: Annotated[int, RUNTIME] = Field(
        default=24 * 60,
        ge=1,
        le=7 * 24 * 60,
        description="Longest quiet wait before an idle chat: each unanswered opener doubles the "
        "channel's quiet minutes up to this (never below them); an answer resets it.",
    )
    stream_edit_interval: Annotated[float, RUNTIME] = Field(
        default=1.2,
        ge=0.2,
        le=30,
        description="Seconds between edits of a streamed reply on Discord "
        "(Discord allows 5 edits per 5 seconds per channel).",
    )

    llm_model: Annotated[str, RUNTIME] = Field(
        default="ollama/qwen3:8b",
        min_length=1,
        description="Chat model: ollama/<name> for Ollama, otherwise a LiteLLM model string "
        "such as openai/gpt-4o-mini.",
    )
    llm_api_base: Annotated[str, RUNTIME] = Field(
        default="http://localhost:11434",
        description="Ollama's address, or the base URL of an OpenAI-compatible server (usually "
        "ending in /v1); hosted providers ignore it while it is the Ollama default.",
    )
    llm_api_key: Annotated[SecretStr | None, RUNTIME] = Field(
        default=None,
        description="API key for the model provider (secret); OPENAI_API_KEY and the like are "
        "not read.",
    )
    llm_timeout: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="Seconds to wait for the model to start answering, and between streamed "
        "pieces.",
    )
    turn_timeout: float = Field(
        default=300.0,
        gt=0,
        le=3600,
        description="Seconds one whole answer may take, tool calls included.",
    )
    max_answer_chars: int = Field(
        default=20_000,
        ge=100,
        le=1_000_000,
        description="Characters one answer may have; a longer answer ends there with a notice.",
    )
    llm_context_tokens: Annotated[int, RUNTIME] = Field(
        default=16384,
        ge=512,
        le=1_048_576,
        description="The model's context window in tokens; the prompt is fitted to it.",
    )
    llm_vision: bool = Field(
        default=False, description="Send images to the model (vision-capable models only)."
    )
    embed_model: Annotated[str, RUNTIME] = Field(
        default="",
        description="Embedding model for the local knowledge base and recall; empty = "
        "ollama/nomic-embed-text on Ollama for the knowledge base only, keyword ranking "
        "otherwise.",
    )
    system_prompt_extra: Annotated[str, RUNTIME] = Field(
        default="", description="Extra instructions appended to the system prompt."
    )

    db_path: Path = Field(
        default=Path("data/playchat.db"),
        description="The SQLite database file (used while DATABASE_URL is empty).",
    )
    database_url: SecretStr = Field(
        default=SecretStr(""),
        description="sqlite:///FILE or postgresql://USER:PASSWORD@HOST/DB (secret); "
        "empty: the SQLite file at DB_PATH.",
    )
    kb_dir: Path = Field(
        default=Path("knowledge_base"), description="Folder of the local Markdown knowledge base."
    )
    language: Annotated[Language, RUNTIME] = Field(
        default="en",
        description="Language of the bot's own messages and prompts; the model still answers "
        "in the language the user writes in.",
    )
    local_space: Annotated[str, Field(pattern=LOCAL_NAME_PATTERN)] = Field(
        default=DEFAULT_LOCAL_NAME,
        description="The space of the terminal chat and the admin API's chat (local:<name>).",
    )

    memory_summarize_threshold: Annotated[int, RUNTIME] = Field(
        default=20,
        ge=4,
        le=1000,
        description="Live messages in a conversation at which the oldest half is summarised "
        "into long-term memory (and archived, never deleted).",
    )
    knowledge_context_limit: Annotated[int, RUNTIME] = Field(
        default=15,
        ge=0,
        le=100,
        description="Knowledge headings the model sees in its context; 0 = none.",
    )
    session_notes_content_limit: int = Field(
        default=8000,
        ge=0,
        le=100_000,
        description="Characters of each note linked to a thread that go into its context.",
    )
    local_kb_top_k: Annotated[int, RUNTIME] = Field(
        default=3,
        ge=0,
        le=20,
        description="Local knowledge base files added to the context per message; 0 = off.",
    )
    local_kb_min_score: Annotated[float, RUNTIME] = Field(
        default=0.75,
        ge=-1,
        le=1,
        description="Minimum cosine similarity of a local knowledge base file to a message for it "
        "to be used.",
    )
    tagging_mode: Annotated[Literal["keywords", "llm"], RUNTIME] = Field(
        default="keywords",
        description="How messages are tagged: keywords (no LLM call) or llm (one extra call per "
        "message).",
    )

    web_search_max_results: Annotated[int, RUNTIME] = Field(
        default=5, ge=1, le=20, description="Results one web search returns."
    )
    web_search_backend: str = Field(
        default="duckduckgo",
        description='The ddgs search backend web_search uses ("auto" tries engines in turn).',
    )
    scrape_max_chars: Annotated[int, RUNTIME] = Field(
        default=4000,
        ge=500,
        le=100_000,
        description="Characters of page text one scrape_url call returns; the rest is paged "
        "(continuation token).",
    )
    fetch_max_chars: Annotated[int, RUNTIME] = Field(
        default=8000,
        ge=500,
        le=100_000,
        description="Characters of text one pdf_to_text or search_and_fetch call returns; the "
        "rest is paged (continuation token).",
    )
    fetch_max_results: Annotated[int, RUNTIME] = Field(
        default=3, ge=1, le=10, description="Pages search_and_fetch reads per call."
    )
    max_fetch_mb: int = Field(
        default=10, ge=1, le=100, description="Megabytes one download may have (decoded)."
    )
    max_pdf_pages: int = Field(
        default=25,
        ge=1,
        le=1000,
        description="Pages of a PDF read and parsed per tool call; later pages come with the "
        "continuation token.",
    )
    fetch_timeout: float = Field(
        default=20.0, gt=0, le=300, description="Seconds one download may take."
    )
    max_image_pixels: int = Field(
        default=16_000_000,
        ge=10_000,
        le=100_000_000,
        description="Pixels an image may have before it is scaled down for the model.",
    )
    max_tool_result_chars: int = Field(
        default=6000,
        ge=1000,
        le=24_000,
        description="Characters of one tool result the model receives, its paging footer included.",
    )
    pagination_token_ttl: int = Field(
        default=1800,
        ge=0,
        le=2_592_000,
        description="Seconds a continuation token of a paged tool result stays valid; 0 = forever.",
    )
    parser_workers: int = Field(
        default=2,
        ge=1,
        le=8,
        description="Worker processes that parse fetched HTML and PDFs.",
    )

    mcp_config: Path | None = Field(
        default=None, description="A JSON file listing MCP servers (mcpServers format)."
    )
    mcp_call_timeout: float = Field(
        default=60.0, gt=0, le=3600, description="Seconds an MCP tool call may take."
    )
    confirm_note_writes: Annotated[bool, RUNTIME] = Field(
        default=False,
        description="Ask the member (Allow / Deny buttons) before the model writes a shared "
        'note; MCP servers ask when their config entry says "confirm": true.',
    )
    approval_timeout_seconds: Annotated[float, RUNTIME] = Field(
        default=120.0,
        ge=1,
        le=900,
        description="Seconds a tool call waits for its member's Allow / Deny; no answer in "
        "time counts as Deny.",
    )

    admin_host: str = Field(
        default="127.0.0.1",
        description="Address the admin API binds to; anything but loopback needs a password.",
    )
    admin_port: int = Field(
        default=8765, ge=0, le=65535, description="Port of the admin API; 0 = any free port."
    )
    admin_password: SecretStr | None = Field(
        default=None,
        description="Password of the admin page's login (secret); required to bind ADMIN_HOST "
        "beyond loopback.",
    )
    admin_token: SecretStr | None = Field(
        default=None, description="Bearer token for scripts, 16+ characters (secret)."
    )
    admin_enabled: bool = Field(
        default=True,
        description="Run the admin API in this process (python -m admin_api runs it alone).",
    )
    admin_access_log: bool = Field(
        default=False,
        description="Log one line per admin API request (aiohttp.access); off keeps the log quiet.",
    )
    admin_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Extra Host names the admin API answers to, e.g. behind a reverse proxy.",
    )
    admin_header_timeout: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds a client may take to send a request's headers.",
    )
    admin_body_timeout: float = Field(
        default=60.0, gt=0, le=3600, description="Seconds a client may take to send a body."
    )
    admin_keepalive_timeout: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description="Seconds an idle kept-alive connection stays open.",
    )
    admin_max_connections: int = Field(
        default=100, ge=1, le=10_000, description="Open connections the admin API accepts."
    )
    admin_trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Reverse proxies (IPs or CIDR networks) whose forwarding headers are believed.",
    )

    readiness_interval: float = Field(
        default=60.0,
        ge=10,
        le=3600,
        description="Seconds between readiness checks of the model, embeddings, database, MCP "
        "servers, scheduler and Discord.",
    )

    event_loop: Literal["auto", "uvloop", "asyncio"] = Field(
        default="auto",
        description="The event loop: auto (uvloop where installed, else asyncio's), uvloop "
        "(fail without it) or asyncio.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        default="INFO", description="Least severe log level shown."
    )
    debug: bool = Field(
        default=False,
        description="Log PlayChat and the LLM libraries at DEBUG, requests and responses "
        "included (known secrets masked).",
    )

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

    @field_validator("shard_ids", mode="before")
    @classmethod
    def _split_shards(cls, value: Any) -> Any:
        """Accept comma-separated shard numbers and ranges (0,1 or 0-3, as a systemd instance
        name `playchat@0-3` gives them) as well as JSON lists."""
        if isinstance(value, int):
            return [value]
        if isinstance(value, str):
            shards: list[int] = []
            for part in (part for part in value.replace(" ", "").split(",") if part):
                first, dash, last = part.partition("-")
                if not first.isdigit() or (dash and not last.isdigit()):
                    raise ValueError("expected shard numbers or ranges, e.g. 0,1 or 0-3")
                if dash and int(last) < int(first):
                    raise ValueError(f"the shard range {part} runs backwards")
                shards.extend(range(int(first), int(last if dash else first) + 1))
            return shards
        return value

    @field_validator("shard_ids")
    @classmethod
    def _shards_below_count(cls, value: list[int], info: ValidationInfo) -> list[int]:
        """Each shard id is listed once and is below SHARD_COUNT (which must then be set)."""
        if not value:
            return value
        if "shard_count" not in info.data:
            return value  # SHARD_COUNT itself is invalid; that error says so.
        count = info.data["shard_count"]
        if count is None:
            raise ValueError("SHARD_IDS needs SHARD_COUNT (the bot's total number of shards)")
        wrong = [i for i in value if not 0 <= i < count]
        if wrong:
            raise ValueError(
                f"shard ids run from 0 to {count - 1} (SHARD_COUNT={count}); "
                f"out of range: {', '.join(map(str, wrong))}"
            )
        if len(set(value)) != len(value):
            raise ValueError("a shard id is listed twice")
        return sorted(value)

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
    def shards(self) -> ShardFilter:
        """The shards this process serves (unsharded when SHARD_COUNT is unset)."""
        return ShardFilter.of(self.shard_count, self.shard_ids)

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


def model_backend(model: str) -> Literal["ollama", "litellm"]:
    """`ollama` (the native client) or `litellm`, as the model string selects."""
    return "ollama" if is_ollama_model(model) else "litellm"


def model_provider(model: str) -> str:
    """The provider the model string names (`ollama`, `openai`, `anthropic`…)."""
    if is_ollama_model(model):
        return "ollama"
    head, separator, _ = model.partition("/")
    # A bare model name ("gpt-4o-mini") is LiteLLM's default provider.
    return head if separator else "openai"


def strip_ollama_prefix(model: str) -> str:
    """Model name as the Ollama server knows it."""
    for prefix in OLLAMA_PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix) :]
    return model


def mask_secret(value: str) -> dict[str, Any]:
    """A secret as the outside world may see it: whether it is set and its last 4 characters."""
    return {"set": bool(value), "last4": value[-4:] if len(value) >= 8 else ""}


def runtime_keys(model: type[BaseModel]) -> frozenset[str]:
    """The names of `model`'s fields marked RUNTIME."""
    return frozenset(
        name
        for name, field in model.model_fields.items()
        if any(isinstance(item, RuntimeEditable) for item in field.metadata)
    )


# Settings that may be changed at runtime (admin API / slash commands) without a restart.
RUNTIME_KEYS = runtime_keys(Settings)


Listener = Callable[[Settings, frozenset[str]], None]
SavedHook = Callable[[frozenset[str]], None]


class OverrideStore(Protocol):
    """Where runtime overrides persist (the store's app_settings repository)."""

    async def all(self) -> dict[str, Any]:
        """Every stored override, by key."""
        ...

    async def set_many(self, values: dict[str, Any]) -> None:
        """Store these overrides (None deletes a key)."""
        ...


class InvalidSettings(ValidationError):
    """Runtime changes were refused; `problems` names each bad setting (key → message)."""

    def __init__(self, problems: dict[str, str]) -> None:
        super().__init__(" ".join(problems.values()))
        self.problems = problems


def _runtime_model() -> type[BaseModel]:
    """A model of the runtime-editable settings, every field as Settings declares it."""
    # Built from the same FieldInfo as Settings, so bounds and allowed values apply to runtime
    # changes exactly as they do to `.env` (a bare TypeAdapter of the annotation dropped them).
    fields: dict[str, Any] = {
        key: (Settings.model_fields[key].annotation, Settings.model_fields[key])
        for key in RUNTIME_KEYS
    }
    return create_model(
        "RuntimeSettingsValues", __config__=ConfigDict(extra="forbid", frozen=True), **fields
    )


RUNTIME_VALUES = _runtime_model()


def check_runtime_values(values: dict[str, Any]) -> dict[str, Any]:
    """The values validated against their settings' types and bounds (InvalidSettings if not).

    Every key must be runtime-editable; None (reset to the environment value) passes as is.
    """
    problems = {
        key: f"{key} cannot be changed at runtime." for key in values if key not in RUNTIME_KEYS
    }
    given = {key: value for key, value in values.items() if value is not None}
    parsed: dict[str, Any] = {}
    try:
        model = RUNTIME_VALUES.model_validate(
            {key: value for key, value in given.items() if key in RUNTIME_KEYS}
        )
        parsed = {key: getattr(model, key) for key in model.model_fields_set}
    except PydanticValidationError as exc:
        for error in exc.errors(include_input=False, include_url=False):
            key = str(error["loc"][0]) if error["loc"] else ""
            if key in RUNTIME_KEYS and error["type"] == "value_error":
                reason = str(error["msg"]).removeprefix("Value error, ")
                problems.setdefault(key, f"{key} is not valid: {reason}.")
            elif key in RUNTIME_KEYS:
                problems.setdefault(key, f"{key} must be {expected_value(key)}.")
    if problems:
        raise InvalidSettings({key: problems[key] for key in values if key in problems})
    return {key: parsed.get(key) for key in values}


def _log_value(key: str, value: Any) -> str:
    """A setting's value for a log line: a secret as its last 4 characters only."""
    if key in SECRET_KEYS:
        text = str(value or "")
        masked = mask_secret(text)
        return f"…{masked['last4']}" if masked["set"] else "(not set)"
    return repr(value)


class RuntimeSettings:
    """Holds the current Settings; overrides are validated, stored and applied at once."""

    def __init__(self, base: Settings, repo: OverrideStore | None = None) -> None:
        self._base = base
        self._repo = repo
        self._overrides: dict[str, Any] = {}
        self._current = base
        self._listeners: list[Listener] = []
        self._saved_hooks: list[SavedHook] = []
        # Stored overrides left out (not JSON, or refused by the setting), key → why; each is
        # logged once when it appears, not on every reload.
        self._skipped: dict[str, str] = {}
        # Serialises a local update with a reload, so neither sees the other half done.
        self._changing = asyncio.Lock()

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
        """Call `listener(settings, changed_keys)` after every change (local or reloaded)."""
        self._listeners.append(listener)

    def on_saved(self, hook: SavedHook) -> None:
        """Call `hook(changed_keys)` after a change made here is stored (to tell other
        processes); not after a reload."""
        self._saved_hooks.append(hook)

    async def load(self) -> None:
        """Apply the overrides stored in the database (unknown or invalid ones are skipped)."""
        if self._repo is None:
            return
        self._overrides = await self._stored()
        self._rebuild()
        for line in self.page_override_lines():
            log.info("%s", line)

    def page_overrides(self) -> list[str]:
        """The settings whose admin-page value differs from `.env`/the environment/default."""
        return sorted(
            key
            for key, value in self._overrides.items()
            if self._plain(getattr(self._base, key)) != value
        )

    def page_override_lines(self) -> list[str]:
        """One sentence per page override: the value in effect and the one it hides (secrets
        masked), so an owner reading the log knows why `.env` seems ignored."""
        lines = []
        for key in self.page_overrides():
            name = key.upper()
            source = ".env or the environment" if key in self._base.model_fields_set else "default"
            now = _log_value(key, self._overrides[key])
            hidden = _log_value(key, self._plain(getattr(self._base, key)))
            lines.append(
                f"{name}={now} comes from the admin page and overrides the {source} value "
                f"{hidden}; reset it on the Settings page to use .env"
            )
        return lines

    async def reload(self) -> frozenset[str]:
        """Apply what another process stored meanwhile; listeners hear of the changed keys
        (overrides set, changed or reset to the environment). Nothing changed: no call."""
        if self._repo is None:
            return frozenset()
        async with self._changing:
            stored = await self._stored()
            keys = set(stored) | set(self._overrides)
            changed = frozenset(k for k in keys if stored.get(k) != self._overrides.get(k))
            if not changed:
                return changed
            self._overrides = stored
            self._rebuild()
            self._tell(changed)
        log.info("settings reloaded (changed elsewhere): %s", ", ".join(sorted(changed)))
        return changed

    async def update(self, changes: dict[str, Any]) -> frozenset[str]:
        """Validate and store overrides (None resets a key to its environment value)."""
        parsed = check_runtime_values(changes)
        async with self._changing:
            if self._repo is not None:
                await self._repo.set_many(
                    {key: self._plain(value) for key, value in parsed.items()}
                )
            for key, value in parsed.items():
                self._skipped.pop(key, None)  # stored anew (or deleted): in effect again
                if value is None:
                    self._overrides.pop(key, None)
                else:
                    self._overrides[key] = self._plain(value)
            self._rebuild()
            changed = frozenset(parsed)
            self._tell(changed)
        for hook in self._saved_hooks:
            hook(changed)
        log.info("settings changed: %s", ", ".join(sorted(changed)))
        return changed

    def skipped(self) -> dict[str, str]:
        """Stored overrides not in effect, by key: why each was left out."""
        return dict(self._skipped)

    async def _stored(self) -> dict[str, Any]:
        """The valid stored overrides as plain values (the others skipped, see `skipped`)."""
        assert self._repo is not None
        valid: dict[str, Any] = {}
        skipped: dict[str, str] = {}
        for key, value in (await self._repo.all()).items():
            try:
                if isinstance(value, ValueError):  # the store could not decode the row
                    raise ValidationError(f"not valid JSON ({value})")
                valid[key] = self._plain(check_runtime_values({key: value})[key])
            except ValidationError as exc:
                skipped[key] = str(exc)
                if self._skipped.get(key) != skipped[key]:
                    log.warning("ignoring stored setting %s: %s", key, exc)
        self._skipped = skipped
        return valid

    def _tell(self, changed: frozenset[str]) -> None:
        for listener in self._listeners:
            listener(self._current, changed)

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

    @staticmethod
    def _plain(value: Any) -> Any:
        return value.get_secret_value() if isinstance(value, SecretStr) else value

    def _rebuild(self) -> None:
        updates = check_runtime_values(self._overrides)
        self._current = self._base.model_copy(update=updates)
