"""The start-up settings (those only a restart changes), grouped by topic, secrets masked."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr

from bot.config import RUNTIME_KEYS, SECRET_KEYS, Settings, mask_secret

# Topic → the settings in it, in the order an owner reads them; a field not listed goes to
# the last group, so a new setting still shows.
STARTUP_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("model", "Model", ("llm_timeout", "turn_timeout", "max_answer_chars", "llm_vision")),
    ("memory", "Memory", ("kb_dir", "session_notes_content_limit", "space_retention_days")),
    (
        "tools",
        "Tools",
        (
            "web_search_backend",
            "max_tool_result_chars",
            "max_fetch_mb",
            "fetch_timeout",
            "max_pdf_pages",
            "max_image_pixels",
            "pagination_token_ttl",
            "parser_workers",
            "mcp_config",
            "mcp_call_timeout",
        ),
    ),
    (
        "discord",
        "Discord and access",
        (
            "discord_token",
            "discord_allow_dms",
            "discord_allowed_channel_ids",
            "discord_denied_channel_ids",
            "discord_allowed_user_ids",
            "discord_denied_user_ids",
            "discord_allowed_role_ids",
            "discord_denied_role_ids",
            "discord_admin_role_ids",
            "owner_user_ids",
            "discord_guild_ids",
            "user_max_concurrent_turns",
            "shard_count",
            "shard_ids",
        ),
    ),
    (
        "admin",
        "Admin page and API",
        (
            "admin_enabled",
            "admin_host",
            "admin_port",
            "admin_password",
            "admin_token",
            "admin_allowed_hosts",
            "admin_trusted_proxies",
            "admin_max_connections",
            "admin_header_timeout",
            "admin_body_timeout",
            "admin_keepalive_timeout",
            "readiness_interval",
        ),
    ),
    ("process", "Storage and process", ()),
)
# Lists of Discord ids, shown as strings like every Discord id of the API.
ID_LISTS = frozenset(
    key
    for key, info in Settings.model_fields.items()
    if key.endswith("_ids") and info.annotation == list[int]
)


class StartupSetting(BaseModel):
    """One setting read at start-up: its value (secrets as {set, last4}) and where it came from."""

    key: str
    env: str
    value: Any
    secret: bool
    source: Literal["env", "default"]
    description: str


class StartupGroup(BaseModel):
    """The start-up settings of one topic."""

    id: str
    title: str
    settings: list[StartupSetting]


class StartupSettingsOut(BaseModel):
    """Settings that only a restart changes (edit `.env` or the environment, then restart)."""

    groups: list[StartupGroup]


def _shown(settings: Settings, key: str) -> Any:
    value = getattr(settings, key)
    if key in SECRET_KEYS or isinstance(value, SecretStr):
        return mask_secret(settings.secret(key))
    if key in ID_LISTS:
        return [str(item) for item in value]
    if isinstance(value, Path):
        return str(value)
    return value


def startup_groups(settings: Settings) -> StartupSettingsOut:
    """Every setting outside RUNTIME_KEYS, grouped by topic, secrets masked."""
    fields = Settings.model_fields
    placed = {key for _, _, keys in STARTUP_GROUPS for key in keys}
    rest = tuple(key for key in fields if key not in RUNTIME_KEYS and key not in placed)
    groups = []
    for group_id, title, keys in STARTUP_GROUPS:
        listed = keys if group_id != "process" else rest
        groups.append(
            StartupGroup(
                id=group_id,
                title=title,
                settings=[
                    StartupSetting(
                        key=key,
                        env=key.upper(),
                        value=_shown(settings, key),
                        secret=key in SECRET_KEYS,
                        source="env" if key in settings.model_fields_set else "default",
                        description=fields[key].description or "",
                    )
                    for key in listed
                    if key in fields and key not in RUNTIME_KEYS
                ],
            )
        )
    return StartupSettingsOut(groups=groups)
