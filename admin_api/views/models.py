"""Model presets (CRUD) and the models the configured backend offers."""

from __future__ import annotations

import time

from admin_api.errors import not_found
from admin_api.routing import Route
from admin_api.schemas.common import DeletedOut, RowId
from admin_api.schemas.models import (
    AvailableModelsOut,
    ConnectionTestOut,
    PresetIn,
    PresetListOut,
    PresetUpdateIn,
)
from bot.errors import LLMError
from bot.services import Services
from bot.store.model_presets import ModelPreset

PING = "Reply with the single word OK."
MAX_REPLY_CHARS = 500


async def list_presets(services: Services) -> PresetListOut:
    """List model presets."""
    return PresetListOut(presets=await services.repos.presets.list())


async def create_preset(services: Services, body: PresetIn) -> ModelPreset:
    """Create a model preset (409 when the model is already listed)."""
    return await services.repos.presets.create(body.label, body.value)


async def update_preset(services: Services, id: RowId, body: PresetUpdateIn) -> ModelPreset:
    """Update a model preset."""
    preset = await services.repos.presets.update(id, label=body.label, value=body.value)
    if preset is None:
        raise not_found(f"Model preset {id}")
    return preset


async def delete_preset(services: Services, id: RowId) -> DeletedOut:
    """Delete a model preset."""
    if not await services.repos.presets.delete(id):
        raise not_found(f"Model preset {id}")
    return DeletedOut(deleted=1)


async def available_models(services: Services) -> AvailableModelsOut:
    """Models the configured backend offers (Ollama: its pulled models)."""
    models = await services.gateway.list_models()
    return AvailableModelsOut(current=services.settings().llm_model, models=models)


async def test_connection(services: Services) -> ConnectionTestOut:
    """Call the configured model once and report the result.

    A failure is a result, not an error.
    """
    model = services.settings().llm_model
    started = time.perf_counter()
    error: str | None = None
    try:
        completion = await services.gateway.complete(
            [{"role": "user", "content": PING}], purpose="connection_test"
        )
    except LLMError as exc:
        reply, error = "", exc.detail  # the owner's view: the address and the setting to change
    else:
        reply = completion.text[:MAX_REPLY_CHARS]
    return ConnectionTestOut(
        ok=error is None,
        model=model,
        latency_ms=int((time.perf_counter() - started) * 1000),
        reply=reply,
        error=error,
    )


def routes() -> list[Route]:
    """Model routes."""
    return [
        Route("GET", "/api/models/presets", list_presets),
        Route("POST", "/api/models/presets", create_preset, status=201),
        Route("PATCH", "/api/models/presets/{id}", update_preset),
        Route("DELETE", "/api/models/presets/{id}", delete_preset),
        Route("GET", "/api/models/available", available_models),
        Route("POST", "/api/models/test", test_connection),
    ]
