"""The settings in effect: `.env`/environment values with runtime overrides from app_settings."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import SecretStr, TypeAdapter
from pydantic import ValidationError as PydanticValidationError

from bot.config import RUNTIME_KEYS, SECRET_KEYS, Settings, mask_secret
from bot.errors import ValidationError
from bot.store.app_settings import AppSettingsRepository

log = logging.getLogger(__name__)

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
