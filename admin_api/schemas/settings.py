"""Runtime settings as the API shows them: secrets masked on purpose."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from admin_api.schemas.common import Body


class SettingsOut(BaseModel):
    """Runtime-editable settings; secrets appear only as {set, last4}."""

    values: dict[str, Any]
    secret_keys: list[str]


class SettingsUpdateIn(Body):
    """New values by key; null resets a key; a secret sent back masked keeps the stored one."""

    values: dict[str, Any]
