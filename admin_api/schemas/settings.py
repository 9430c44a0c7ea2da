"""Runtime settings as the API shows them: secrets masked on purpose; their JSON Schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from admin_api.schemas.common import Body
from bot.config import RUNTIME_KEYS, SECRET_KEYS, Settings

Source = Literal["env", "default", "override"]
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class SettingsOut(BaseModel):
    """Runtime-editable settings; secrets appear only as {set, last4}.

    `sources` says where each value comes from: `.env` or the environment, the built-in
    default, or a runtime override (which a PUT with null removes); `skipped`, which stored
    overrides are left out and why.
    """

    values: dict[str, Any]
    secret_keys: list[str]
    sources: dict[str, Source]
    skipped: dict[str, str] = Field(
        default_factory=dict,
        description="Stored overrides not in effect (not JSON, or refused by the setting), "
        "by key: why. The `.env` value applies until the key is set again or reset.",
    )


class SettingsUpdateIn(Body):
    """New values by key; null resets a key; a secret sent back masked keeps the stored one.

    Keys are the runtime settings' names in lower case (`GET /api/settings/schema` lists them),
    e.g. `{"values": {"llm_api_base": "http://127.0.0.1:11434", "llm_api_key": null}}`. A value
    set here is stored in the database and wins over `.env` and the environment (each start
    logs one line per such setting) until reset with null.
    """

    values: Annotated[
        dict[str, Any],
        Field(
            description="Setting name (lower case) → new value; null resets it to .env.",
            examples=[{"llm_api_base": "http://127.0.0.1:11434", "llm_api_key": None}],
        ),
    ]


def runtime_settings_schema(base: Settings) -> dict[str, Any]:
    """A JSON Schema of the runtime-editable settings, generated from `Settings`' fields.

    Each property keeps the field's type, description, bounds and allowed values; `default` is
    the value from `.env`/the environment (what a reset returns to); secrets carry
    `secret: true` and no default.
    """
    declared = Settings.model_json_schema()["properties"]
    values = base.model_dump(mode="json")
    properties: dict[str, Any] = {}
    for key in sorted(RUNTIME_KEYS):
        prop = dict(declared[key])
        if key in SECRET_KEYS:
            prop = {
                "type": "string",
                "writeOnly": True,
                "secret": True,
                "title": prop.get("title", key),
                "description": prop.get("description", ""),
            }
        else:
            prop["default"] = values[key]
        properties[key] = prop
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "PlayChat runtime settings",
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
