"""Model presets (a preset is `bot.store.model_presets.ModelPreset`) and backend checks."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from admin_api.schemas.common import Body
from bot.store.model_presets import ModelPreset

Title = Annotated[str, Field(min_length=1, max_length=200)]
ModelName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:/@+-]+$")]


class PresetListOut(BaseModel):
    """Every preset."""

    presets: list[ModelPreset]


class PresetIn(Body):
    """A new preset."""

    label: Title
    value: ModelName


class PresetUpdateIn(Body):
    """Changes to a preset."""

    label: Title | None = None
    value: ModelName | None = None


class AvailableModelsOut(BaseModel):
    """The configured model and the models the configured backend offers."""

    current: str
    models: list[str]


class ConnectionTestOut(BaseModel):
    """One short call to the configured model: whether it answered, how fast, and what."""

    ok: bool
    model: str
    latency_ms: int
    reply: str
    error: str | None
