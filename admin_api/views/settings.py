"""Runtime settings: read (secrets masked) and change without a restart."""

from __future__ import annotations

from typing import Any

from admin_api.deps import AdminDeps
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import SettingsOut, SettingsUpdateIn
from bot.config import RUNTIME_KEYS, SECRET_KEYS, RuntimeSettings

TAG = "settings"
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


async def get_settings(call: In[Empty, Empty, Empty]) -> SettingsOut:
    """Every runtime-editable setting; secrets as {set, last4}."""
    return _view(call.ctx.services.settings)


async def put_settings(call: In[SettingsUpdateIn, Empty, Empty]) -> SettingsOut:
    """Validate and apply changes at once (the running bot reads settings per call)."""
    settings = call.ctx.services.settings
    changes = secret_changes(call.body.values)
    if changes:
        await settings.update(changes)
    return _view(settings)


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Settings routes."""
    return [
        Route(
            method="GET",
            path="/api/settings",
            handler=get_settings,
            summary="Runtime settings (secrets masked)",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=SettingsOut,
        ),
        Route(
            method="PUT",
            path="/api/settings",
            handler=put_settings,
            summary="Change runtime settings",
            tag=TAG,
            body=SettingsUpdateIn,
            query=Empty,
            params=Empty,
            response=SettingsOut,
        ),
    ]
