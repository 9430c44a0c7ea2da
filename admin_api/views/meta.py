"""Health check and the OpenAPI document."""

from __future__ import annotations

from admin_api.routing import Route
from admin_api.schemas.meta import HealthOut, OpenApiOut
from admin_api.state import AdminState


async def health() -> HealthOut:
    """Liveness check (no authentication; reveals nothing)."""
    return HealthOut()


async def openapi_document(admin: AdminState) -> OpenApiOut:
    """This OpenAPI document."""
    return OpenApiOut.model_validate(await admin.openapi.get())


def routes() -> list[Route]:
    """Meta routes."""
    return [
        Route("GET", "/health", health, public=True),
        Route("GET", "/api/openapi.json", openapi_document),
    ]
