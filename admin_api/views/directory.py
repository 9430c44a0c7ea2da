"""The channel directory: what the bot can see of its servers, for picking channels by name."""

from __future__ import annotations

from admin_api.routing import Route
from admin_api.schemas.common import SpaceId, scope_of
from admin_api.schemas.directory import DirectoryOut
from admin_api.schemas.rows import DirectoryServerOut
from bot.services import Services


async def list_directory(services: Services, space: SpaceId | None = None) -> DirectoryOut:
    """Servers and their channels by name (one server's with `space`).

    Recorded by the bot when it connects, joins a server and as channels are created,
    renamed or deleted.
    """
    servers = await services.repos.directory.servers(scope_of(space))
    return DirectoryOut(servers=[DirectoryServerOut.model_validate(s) for s in servers])


def routes() -> list[Route]:
    """Directory routes."""
    return [Route("GET", "/api/directory", list_directory)]
