"""Runtime settings: read (secrets masked) and change without a restart."""

from __future__ import annotations

from typing import Any

from admin_api.routing import Route
from admin_api.schemas.settings import SettingsOut, SettingsUpdateIn
from bot.config import RUNTIME_KEYS, SECRET_KEYS, RuntimeSettings
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


def _view(settings: RuntimeSettings) -> SettingsOut:
    return SettingsOut(
        values=settings.public_view(), secret_keys=sorted(SECRET_KEYS & RUNTIME_KEYS)
    )


async def get_settings(services: Services) -> SettingsOut:
    """Runtime settings (secrets masked as {set, last4})."""
    return _view(services.settings)


async def put_settings(services: Services, body: SettingsUpdateIn) -> SettingsOut:
    """Change runtime settings.

    Changes are validated and applied at once (the running bot reads settings per call).
    """
    changes = secret_changes(body.values)
    if changes:
        await services.settings.update(changes)
    return _view(services.settings)


def routes() -> list[Route]:
    """Settings routes."""
    return [
        Route("GET", "/api/settings", get_settings),
        Route("PUT", "/api/settings", put_settings),
    ]
