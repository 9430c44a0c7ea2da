"""Health and the OpenAPI document."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class HealthOut(BaseModel):
    """Liveness."""

    status: Literal["ok"] = "ok"


class OpenApiOut(BaseModel):
    """The OpenAPI 3.1 document of this API."""

    model_config = ConfigDict(extra="allow")

    openapi: str
