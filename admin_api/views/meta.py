"""Health check and the OpenAPI document."""

from __future__ import annotations

from admin_api.deps import AdminDeps
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import HealthOut, OpenApiOut


async def health(call: In[Empty, Empty, Empty]) -> HealthOut:
    """Liveness; needs no authentication and reveals nothing."""
    return HealthOut()


async def openapi_document(call: In[Empty, Empty, Empty]) -> OpenApiOut:
    """The OpenAPI 3.1 document generated from the route table."""
    return OpenApiOut.model_validate(call.ctx.openapi)


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Meta routes."""
    return [
        Route(
            method="GET",
            path="/health",
            handler=health,
            summary="Liveness check (no authentication)",
            tag="meta",
            body=Empty,
            query=Empty,
            params=Empty,
            response=HealthOut,
            public=True,
        ),
        Route(
            method="GET",
            path="/api/openapi.json",
            handler=openapi_document,
            summary="This OpenAPI document",
            tag="meta",
            body=Empty,
            query=Empty,
            params=Empty,
            response=OpenApiOut,
        ),
    ]
