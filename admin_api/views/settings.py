"""Runtime settings: read (secrets masked), their schema, and change without a restart."""

from __future__ import annotations

from typing import Any

from admin_api.errors import ApiError
from admin_api.routing import Route
from admin_api.schemas.settings import (
    SettingsOut,
    SettingsUpdateIn,
    Source,
    runtime_settings_schema,
)
from admin_api.schemas.startup import StartupSettingsOut, startup_groups
from bot.config import RUNTIME_KEYS, SECRET_KEYS, InvalidSettings, RuntimeSettings
from bot.services import Services

MASK_PREFIXES = ("…", "••••", "...")


def is_masked(value: Any) -> bool:
    """True for a secret as the API shows it ({set, last4}, or a '…abcd'-style string)."""
    if isinstance(value, dict):
        return set(value) <= {"set", "last4"} and "set" in value
    return isinstance(value, str) and value.startswith(MASK_PREFIXES)


def secret_changes(values: dict[str, Any]) -> dict[str, Any]:
    """The changes to apply: a masked value sent back for a secret keeps the stored secret."""
    return {
        key: value for key, value in values.items() if not (key in SECRET_KEYS and is_masked(value))
    }


def sources(settings: RuntimeSettings) -> dict[str, Source]:
    """Where each runtime setting's value comes from: override, env (or .env), or default."""
    overridden = settings.overrides()
    from_env = settings.base.model_fields_set
    return {
        key: "override" if key in overridden else "env" if key in from_env else "default"
        for key in sorted(RUNTIME_KEYS)
    }


def _view(settings: RuntimeSettings) -> SettingsOut:
    return SettingsOut(
        values=settings.public_view(),
        secret_keys=sorted(SECRET_KEYS & RUNTIME_KEYS),
        sources=sources(settings),
        skipped=settings.skipped(),
    )


async def get_settings(services: Services) -> SettingsOut:
    """Runtime settings (secrets masked as {set, last4}) and where each value comes from."""
    return _view(services.settings)


async def get_settings_schema(services: Services) -> dict[str, Any]:
    """JSON Schema of the runtime settings: types, descriptions, bounds, allowed values.

    `default` is the value from `.env` or the environment (what a reset returns to); secrets
    are marked `secret: true` and have no default.
    """
    return runtime_settings_schema(services.settings.base)


async def put_settings(services: Services, body: SettingsUpdateIn) -> SettingsOut:
    """Change runtime settings; null resets a key to its `.env` value.

    Body: `{"values": {"llm_api_base": "http://127.0.0.1:11434", "llm_api_key": null}}` —
    lower-case setting names (see `/api/settings/schema`). A stored value wins over `.env` and
    the environment until reset; every start logs one INFO line per such setting. All changes
    are validated first and applied together, or none is (422 naming each refused key in
    `fields`). The running bot reads settings per call.
    """
    changes = secret_changes(body.values)
    if changes:
        try:
            await services.settings.update(changes)
        except InvalidSettings as exc:
            raise ApiError(422, "validation_error", str(exc), fields=exc.problems) from None
    return _view(services.settings)


async def get_startup_settings(services: Services) -> StartupSettingsOut:
    """The settings read at start-up (access lists, admin binding, limits…), by topic.

    Read-only: change them in `.env` or the environment and restart. Secrets appear as
    {set, last4}; lists of Discord ids as strings.
    """
    return startup_groups(services.settings.base)


def routes() -> list[Route]:
    """Settings routes."""
    return [
        Route("GET", "/api/settings", get_settings),
        Route("GET", "/api/settings/schema", get_settings_schema),
        Route("GET", "/api/settings/startup", get_startup_settings),
        Route("PUT", "/api/settings", put_settings),
    ]
