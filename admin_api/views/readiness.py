"""Readiness of the bot's parts (authenticated; `/health` stays the public liveness check)."""

from __future__ import annotations

from admin_api.routing import Route
from admin_api.schemas.readiness import ReadinessOut
from bot.services import Services


async def readiness(services: Services) -> ReadinessOut:
    """Every component's state, detail, last error and check time, and the overall status."""
    return ReadinessOut.of(services.readiness)


async def check_now(services: Services) -> ReadinessOut:
    """Run every check now and return the result."""
    await services.readiness.check()
    return ReadinessOut.of(services.readiness)


def routes() -> list[Route]:
    """Readiness routes."""
    return [
        Route("GET", "/api/readiness", readiness),
        Route("POST", "/api/readiness/check", check_now),
    ]
