"""The runtime settings are the Settings fields marked RUNTIME; every list of them is derived:
what the API serves and accepts, the README reference and the admin page's groups."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from bot.config import RUNTIME, RUNTIME_KEYS, SECRET_KEYS, RuntimeEditable, Settings, runtime_keys
from bot.ops.settings_reference import render_table
from tests.admin_api.conftest import Admin

SETTINGS_JS = Path(__file__).parents[2] / "admin_api" / "static" / "js" / "settings.js"


def marked() -> set[str]:
    """The Settings fields carrying the RUNTIME marker, read straight off their metadata."""
    return {
        name
        for name, field in Settings.model_fields.items()
        if any(isinstance(item, RuntimeEditable) for item in field.metadata)
    }


def test_a_field_is_runtime_exactly_when_marked() -> None:
    class Example(BaseModel):
        tuned: Annotated[int, RUNTIME] = Field(default=1, ge=0)
        fixed: int = Field(default=2)

    assert runtime_keys(Example) == {"tuned"}
    assert Example.model_fields["tuned"].metadata[-1] is RUNTIME
    assert marked() == RUNTIME_KEYS


async def test_the_api_serves_and_accepts_exactly_the_marked_settings(admin: Admin) -> None:
    served = (await admin.get("/api/settings")).json
    assert set(served["values"]) == marked()
    assert set(served["sources"]) == marked()
    schema = (await admin.get("/api/settings/schema")).json
    assert set(schema["properties"]) == marked()
    assert not [key for key, prop in schema["properties"].items() if "runtime" in prop]

    unmarked = sorted(set(Settings.model_fields) - marked())
    reply = await admin.put("/api/settings", {"values": dict.fromkeys(unmarked, None)})
    assert reply.status == 422
    assert set(reply.json["fields"]) == set(unmarked)


def test_the_readme_reference_says_runtime_for_the_marked_settings() -> None:
    rows = [line.split(" | ") for line in render_table().splitlines()[2:]]
    runtime = {row[0].strip("| `").lower() for row in rows if row[-1].strip(" |") == "yes"}
    assert runtime == marked()


def test_the_settings_page_places_every_marked_setting_in_a_group() -> None:
    # Secrets have a section of their own on the page, outside the groups.
    text = SETTINGS_JS.read_text(encoding="utf-8")
    block = text[text.index("const GROUPS = [") : text.index("];", text.index("const GROUPS"))]
    placed = re.findall(r"'([a-z0-9_]+)'", block)
    members = {key for key in placed if key in Settings.model_fields}
    assert members == marked() - SECRET_KEYS
    assert len(members) == len([key for key in placed if key in Settings.model_fields])
