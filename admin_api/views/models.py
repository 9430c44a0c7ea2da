"""Model presets (CRUD) and the models the configured backend offers."""

from __future__ import annotations

import time

from admin_api.deps import AdminDeps
from admin_api.errors import not_found
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import (
    AvailableModelsOut,
    ConnectionTestOut,
    DeletedOut,
    IdPath,
    PresetIn,
    PresetListOut,
    PresetOut,
    PresetUpdateIn,
)
from bot.errors import LLMError

TAG = "models"
PING = "Reply with the single word OK."
MAX_REPLY_CHARS = 500


async def list_presets(call: In[Empty, Empty, Empty]) -> PresetListOut:
    """Every preset."""
    presets = await call.ctx.presets.list()
    return PresetListOut(
        presets=[PresetOut.model_validate(p, from_attributes=True) for p in presets]
    )


async def create_preset(call: In[PresetIn, Empty, Empty]) -> PresetOut:
    """Add a preset (409 when the model is already listed)."""
    preset = await call.ctx.presets.create(call.body.label, call.body.value)
    return PresetOut.model_validate(preset, from_attributes=True)


async def update_preset(call: In[PresetUpdateIn, Empty, IdPath]) -> PresetOut:
    """Change a preset."""
    preset = await call.ctx.presets.update(
        call.path.id, label=call.body.label, value=call.body.value
    )
    if preset is None:
        raise not_found(f"Model preset {call.path.id}")
    return PresetOut.model_validate(preset, from_attributes=True)


async def delete_preset(call: In[Empty, Empty, IdPath]) -> DeletedOut:
    """Remove a preset."""
    if not await call.ctx.presets.delete(call.path.id):
        raise not_found(f"Model preset {call.path.id}")
    return DeletedOut(deleted=1)


async def available_models(call: In[Empty, Empty, Empty]) -> AvailableModelsOut:
    """The configured model and what the backend offers (Ollama: its pulled models)."""
    services = call.ctx.services
    models = await services.gateway.list_models()
    return AvailableModelsOut(current=services.settings().llm_model, models=models)


async def test_connection(call: In[Empty, Empty, Empty]) -> ConnectionTestOut:
    """Send one tiny prompt to the configured model; a failure is a result, not an error."""
    services = call.ctx.services
    model = services.settings().llm_model
    started = time.perf_counter()
    error: str | None = None
    try:
        completion = await services.gateway.complete(
            [{"role": "user", "content": PING}], purpose="connection_test"
        )
    except LLMError as exc:
        reply, error = "", str(exc)
    else:
        reply = completion.text[:MAX_REPLY_CHARS]
    return ConnectionTestOut(
        ok=error is None,
        model=model,
        latency_ms=int((time.perf_counter() - started) * 1000),
        reply=reply,
        error=error,
    )


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Model routes."""
    return [
        Route(
            method="GET",
            path="/api/models/presets",
            handler=list_presets,
            summary="List model presets",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=PresetListOut,
        ),
        Route(
            method="POST",
            path="/api/models/presets",
            handler=create_preset,
            summary="Create a model preset",
            tag=TAG,
            body=PresetIn,
            query=Empty,
            params=Empty,
            response=PresetOut,
            status=201,
        ),
        Route(
            method="PATCH",
            path="/api/models/presets/{id}",
            handler=update_preset,
            summary="Update a model preset",
            tag=TAG,
            body=PresetUpdateIn,
            query=Empty,
            params=IdPath,
            response=PresetOut,
        ),
        Route(
            method="DELETE",
            path="/api/models/presets/{id}",
            handler=delete_preset,
            summary="Delete a model preset",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=DeletedOut,
        ),
        Route(
            method="GET",
            path="/api/models/available",
            handler=available_models,
            summary="Models the configured backend offers",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=AvailableModelsOut,
        ),
        Route(
            method="POST",
            path="/api/models/test",
            handler=test_connection,
            summary="Call the configured model once and report the result",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=ConnectionTestOut,
        ),
    ]
