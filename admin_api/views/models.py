"""Model connections (presets: CRUD, a test call each) and what the configured backend offers.

A connection's test is one small completion through the gateway, the path every turn takes
(the connection's address and key resolved from its model string): LiteLLM cannot list a
hosted provider's models, and one answer proves the address, the key and the model together.
It is bounded by TEST_TIMEOUT and logged in api_logs like any call (purpose connection_test).
"""

from __future__ import annotations

import asyncio
from typing import Any

from admin_api.errors import not_found
from admin_api.routing import Route
from admin_api.schemas.common import DeletedOut, RowId
from admin_api.schemas.models import (
    AvailableModelsOut,
    ConnectionTestOut,
    MaskedSecretIn,
    PresetIn,
    PresetListOut,
    PresetOut,
    PresetTestOut,
    PresetUpdateIn,
    TestKind,
)
from admin_api.views.settings import is_masked
from bot.config import model_backend
from bot.errors import LLMError, LLMUnavailableError
from bot.llm.backend import BackendError
from bot.ops.probes import ModelProbe, connection_target, failure_kind
from bot.ops.readiness import PROBE_TIMEOUT
from bot.services import Services
from bot.store.repos.model_presets import ModelPreset
from bot.utils.durations import elapsed_ms, loop_now

PING = "Reply with the single word OK."
MAX_REPLY_CHARS = 500
TEST_TIMEOUT = 15.0
_STATUS_KINDS: dict[int, TestKind] = {401: "auth", 403: "auth", 404: "not_found"}


def _recheck_connections(services: Services) -> None:
    """Check the connections again in the background (the status screen follows)."""
    services.tasks.spawn(services.readiness.check(["connections"]), name="readiness-connections")


def _key_change(value: str | MaskedSecretIn | None) -> dict[str, str | None]:
    """The key to store: none when it came back masked (the stored key stays)."""
    if value is None:
        return {"api_key": None}
    shown: Any = value.model_dump() if isinstance(value, MaskedSecretIn) else value
    return {} if is_masked(shown) or not isinstance(value, str) else {"api_key": value}


# Order in the list (and the Chat screen's picker): working connections before the rest.
_STATE_RANK = {"ok": 0, "unknown": 1, "down": 2}


def _last_check(services: Services, preset: ModelPreset) -> dict[str, object]:
    """The connection's state at the last connections check, and its warning when down."""
    try:
        parts = services.readiness.status("connections").parts
    except KeyError:
        return {}
    prefix = f"{preset.value}: "
    for part in parts:
        if part.name == preset.label and part.detail.startswith(prefix):
            if part.state == "ok":
                return {"state": "ok"}
            if part.state == "down":
                return {"state": "down", "warning": part.detail[len(prefix) :]}
    return {}


async def list_presets(services: Services) -> PresetListOut:
    """List model connections (keys masked): the configured model (LLM_MODEL) first and
    marked, then those that answered at the last check, then the rest, each with its state."""
    configured = services.settings().llm_model
    shown = [
        PresetOut.of(p, configured=p.value == configured, **_last_check(services, p))
        for p in await services.repos.presets.list()
    ]
    shown.sort(key=lambda p: (not p.configured, _STATE_RANK[p.state]))
    return PresetListOut(presets=shown)


async def create_preset(services: Services, body: PresetIn) -> PresetOut:
    """Create a model connection (409 when the model is already listed)."""
    key = _key_change(body.api_key).get("api_key")
    preset = await services.repos.presets.create(
        body.label, body.value, api_base=body.api_base, api_key=key
    )
    _recheck_connections(services)
    return PresetOut.of(preset)


async def update_preset(services: Services, id: RowId, body: PresetUpdateIn) -> PresetOut:
    """Update a model connection; a masked key sent back keeps the stored key."""
    sent = body.model_fields_set
    changes: dict[str, str | None] = {
        name: getattr(body, name)
        for name in ("label", "value", "api_base")
        if name in sent and (name == "api_base" or getattr(body, name) is not None)
    }
    if "api_key" in sent:
        changes |= _key_change(body.api_key)
    preset = await services.repos.presets.update(id, changes)
    if preset is None:
        raise not_found(f"Model preset {id}")
    _recheck_connections(services)
    return PresetOut.of(preset)


async def delete_preset(services: Services, id: RowId) -> DeletedOut:
    """Delete a model preset."""
    if not await services.repos.presets.delete(id):
        raise not_found(f"Model preset {id}")
    _recheck_connections(services)
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
    started = loop_now()
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
        latency_ms=elapsed_ms(started),
        reply=reply,
        error=error,
    )


def _failure_kind(exc: LLMError) -> TestKind:
    """What kind of failure the gateway reported (its sentence says the rest)."""
    if isinstance(exc, LLMUnavailableError):
        return "unreachable"
    cause = exc.__cause__
    status = cause.status if isinstance(cause, BackendError) else None
    return _STATUS_KINDS.get(status or 0, "error")


async def _call(services: Services, preset: ModelPreset) -> tuple[TestKind, str]:
    """One short completion through the gateway: its kind of result and its sentence."""
    if model_backend(preset.value) == "litellm":
        # Its first use imports LiteLLM (seconds): off the event loop, and not timed.
        from bot.llm.litellm_backend import import_litellm

        await asyncio.to_thread(import_litellm)
    try:
        async with asyncio.timeout(TEST_TIMEOUT):
            completion = await services.gateway.complete(
                [{"role": "user", "content": PING}], model=preset.value, purpose="connection_test"
            )
    except TimeoutError:
        return "timeout", f"{preset.value} did not answer within {TEST_TIMEOUT:g} s."
    except LLMError as exc:
        return _failure_kind(exc), str(exc)
    return "ok", completion.text.strip()[:MAX_REPLY_CHARS] or "(an empty answer)"


async def test_preset(services: Services, id: RowId) -> PresetTestOut:
    """Test a model connection: its server is asked for its models (reachable, the key
    accepted, the model there), then one short call goes through the gateway.

    A failure is a result (`ok` false, `kind`, a sentence naming the address), not an error.
    """
    preset = await services.repos.presets.get(id)
    if preset is None:
        raise not_found(f"Model preset {id}")
    target = connection_target(services.settings(), preset)
    started = loop_now()
    # The server's own model list tells a missing model or a refused key apart from other
    # failures, which a completion's error does not always do (a proxy answers 500 for both).
    checked = await ModelProbe(PROBE_TIMEOUT).check(target)
    kind: TestKind | None = failure_kind(checked)
    if kind is not None:
        message = checked.detail
    else:
        kind, message = await _call(services, preset)
    return PresetTestOut(
        ok=kind == "ok",
        kind=kind,
        message=message,
        model=preset.value,
        address=target.base or None,
        latency_ms=elapsed_ms(started),
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
        Route("POST", "/api/models/{id}/test", test_preset),
    ]
