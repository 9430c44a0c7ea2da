"""Readiness: each component's state, the owner's sentence, its last error, when checked."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from bot.ops.readiness import ComponentStatus, Readiness

StateOut = Literal["ok", "down", "degraded", "disabled", "unknown"]


class PartOut(BaseModel):
    """One sub-part of a component (an MCP server)."""

    name: str
    state: StateOut
    detail: str
    last_error: str | None


class ComponentOut(BaseModel):
    """One component: discord, model, embeddings, database, mcp or scheduler."""

    name: str
    state: StateOut
    detail: str = Field(description="One sentence for the owner: the address and the fix.")
    last_error: str | None
    checked_at: datetime | None
    facts: dict[str, str | int | float | bool | None] = Field(
        default_factory=dict, description="servers, latency_ms, models, tools, jobs, next_run…"
    )
    parts: list[PartOut] = Field(default_factory=list)

    @classmethod
    def of(cls, status: ComponentStatus) -> ComponentOut:
        """The API form of one component's status."""
        return cls(
            name=status.name,
            state=status.state,
            detail=status.detail,
            last_error=status.last_error,
            checked_at=status.checked_at,
            facts=dict(status.facts),
            parts=[
                PartOut(name=p.name, state=p.state, detail=p.detail, last_error=p.last_error)
                for p in status.parts
            ],
        )


class ReadinessOut(BaseModel):
    """Every component and the overall status (down when the model or database is down)."""

    status: Literal["ok", "degraded", "down"]
    components: list[ComponentOut]

    @classmethod
    def of(cls, readiness: Readiness) -> ReadinessOut:
        """The API form of the readiness report."""
        return cls(
            status=readiness.overall(),
            components=[ComponentOut.of(s) for s in readiness.snapshot()],
        )
