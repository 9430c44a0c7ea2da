"""Spaces (one per Discord server, DM user or local chat): list with counts, purge one."""

from __future__ import annotations

from admin_api.errors import ApiError, not_found
from admin_api.routing import Route
from admin_api.schemas.common import SpaceId
from admin_api.schemas.spaces import PurgeOut, SpaceListOut, SpaceOut, SpaceUpdateIn
from bot.errors import NotFoundError
from bot.services import Services
from bot.store.repos.space_records import SpaceRecord


def _space(record: SpaceRecord, held: dict[str, int]) -> SpaceOut:
    return SpaceOut(
        id=record.id,
        kind=record.kind,
        name=record.name,
        discord_id=record.discord_id,
        sessions=held.get("sessions", 0),
        notes=held.get("note_pages", 0),
        knowledge=held.get("knowledge_entries", 0),
        left_at=record.left_at,
        default_model=record.default_model,
        timezone=record.timezone,
    )


async def list_spaces(services: Services) -> SpaceListOut:
    """Every space with its name, kind, counts and when the bot left it (local first)."""
    counts = await services.spaces.counts()
    return SpaceListOut(
        spaces=[
            _space(record, counts.get(record.id, {})) for record in await services.spaces.list()
        ]
    )


async def update_space(services: Services, id: SpaceId, body: SpaceUpdateIn) -> SpaceOut:
    """Set a space's default model (a connection's model string; null: the global model) and
    its time zone (an IANA name; null: UTC); a field left out stays as it is.

    404 when the space is unknown; 422 when no connection (preset) has that model or the host
    does not know the zone.
    """
    if body.default_model is not None:
        presets = await services.repos.presets.list()
        if body.default_model not in {preset.value for preset in presets}:
            raise ApiError(
                422,
                "validation_error",
                f"body.default_model: no model connection uses {body.default_model!r}",
            )
    if not any(record.id == id for record in await services.spaces.list()):
        raise not_found(f"Space {id!r}")
    sent = body.model_fields_set
    record = next(record for record in await services.spaces.list() if record.id == id)
    if "default_model" in sent:
        record = await services.spaces.set_default_model(id, body.default_model)
    if "timezone" in sent:
        record = await services.spaces.set_timezone(id, body.timezone)
    counts = await services.spaces.counts()
    return _space(record, counts.get(record.id, {}))


async def delete_space(services: Services, id: SpaceId) -> PurgeOut:
    """Purge a space: every row and knowledge file of it, nothing of any other space.

    Returns the rows removed per table and the number of files. 404 when nothing is stored.
    """
    try:
        report = await services.spaces.purge_space(id)
    except NotFoundError:
        raise not_found(f"Space {id!r}") from None
    return PurgeOut(
        space_id=report.space_id, rows=report.rows, total_rows=report.total_rows, files=report.files
    )


def routes() -> list[Route]:
    """Space routes."""
    return [
        Route("GET", "/api/spaces", list_spaces),
        Route("PATCH", "/api/spaces/{id}", update_space),
        Route("DELETE", "/api/spaces/{id}", delete_space),
    ]
