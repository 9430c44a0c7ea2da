"""Model connections over the real admin API: keys masked, a masked key kept, the test button
through the gateway against the loopback LLM (success, unreachable, 401, timeout), and turns
routed to each connection's own address and key, Ollama and a hosted endpoint side by side."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest

from admin_api.views import models as models_view
from bot.store.repos.api_logs import ApiLogFilter
from tests.admin_api.conftest import API_KEY, Admin, StartAdmin, sse_events
from tests.fakes.llm_server import FakeLLMServer, Hang, HttpError, Text

HOSTED_KEY = "sk-hosted-0123456789-abcdWXYZ"


@pytest.fixture
async def hosted() -> AsyncIterator[FakeLLMServer]:
    """A second loopback LLM server: the "hosted" OpenAI-compatible endpoint."""
    async with FakeLLMServer(models=("gpt-test",)) as server:
        yield server


def closed_port_url() -> str:
    """An address on this machine where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def answer(stream: str) -> str:
    """The answer text of a chat event stream."""
    return "".join(e["value"] for e in sse_events(stream) if e["type"] == "chunk")


async def _create(admin: Admin, **body: object) -> dict[str, object]:
    reply = await admin.post("/api/models/presets", body)
    assert reply.status == 201, reply.text
    created: dict[str, object] = reply.json
    return created


async def test_a_connection_key_is_stored_shown_masked_and_kept_when_sent_back(
    admin: Admin,
) -> None:
    made = await _create(
        admin,
        label="Hosted",
        value="openai/gpt-test",
        api_base="https://llm.example/v1",
        api_key=HOSTED_KEY,
    )
    assert made["api_key"] == {"set": True, "last4": "WXYZ"}
    assert (made["backend"], made["provider"]) == ("litellm", "openai")
    listed = await admin.get("/api/models/presets")
    assert HOSTED_KEY not in listed.text
    old = next(p for p in listed.json["presets"] if p["value"] == "ollama/test-model")
    assert (old["api_base"], old["api_key"], old["backend"]) == (
        None,
        {"set": False, "last4": ""},
        "ollama",
    )

    preset_id = made["id"]
    for masked in ({"set": True, "last4": "WXYZ"}, "…WXYZ"):
        kept = await admin.patch(
            f"/api/models/presets/{preset_id}", {"label": "Hosted GPT", "api_key": masked}
        )
        assert kept.status == 200 and kept.json["api_key"] == {"set": True, "last4": "WXYZ"}
    stored = await admin.services.repos.presets.get(int(str(preset_id)))
    assert stored is not None and stored.api_key == HOSTED_KEY and stored.label == "Hosted GPT"
    assert HOSTED_KEY not in repr(stored)

    cleared = await admin.patch(
        f"/api/models/presets/{preset_id}", {"api_key": None, "api_base": None}
    )
    assert cleared.json["api_key"] == {"set": False, "last4": ""}
    assert cleared.json["api_base"] is None
    bad = await admin.post(
        "/api/models/presets", {"label": "x", "value": "openai/x", "api_base": "ftp://x"}
    )
    assert bad.status == 422


async def test_the_test_button_reports_success_unreachable_and_a_refused_key(
    admin: Admin, hosted: FakeLLMServer
) -> None:
    made = await _create(
        admin,
        label="Hosted",
        value="openai/gpt-test",
        api_base=hosted.openai_base,
        api_key=HOSTED_KEY,
    )
    hosted.script(Text("OK"))
    ok = await admin.post(f"/api/models/{made['id']}/test")
    assert ok.status == 200, ok.text
    assert ok.json["ok"] is True and ok.json["kind"] == "ok" and ok.json["message"] == "OK"
    (request,) = hosted.chat_requests
    assert request.headers["Authorization"] == f"Bearer {HOSTED_KEY}"
    assert admin.llm.chat_requests == [], "the global server is not called"

    hosted.script(HttpError(401, "Incorrect API key provided"))
    refused = await admin.post(f"/api/models/{made['id']}/test")
    assert refused.json["ok"] is False and refused.json["kind"] == "auth", refused.json
    assert HOSTED_KEY not in refused.text

    down = await _create(admin, label="Away", value="ollama/away-model", api_base=closed_port_url())
    unreachable = await admin.post(f"/api/models/{down['id']}/test")
    assert unreachable.json["ok"] is False and unreachable.json["kind"] == "unreachable"
    assert unreachable.json["message"]

    assert (await admin.post("/api/models/999999/test")).status == 404
    logs = await admin.services.repos.api_logs.list(ApiLogFilter(), limit=10)
    assert {log.purpose for log in logs} == {"connection_test"}
    assert all(HOSTED_KEY not in (log.error or "") for log in logs)


async def test_the_test_button_gives_up_after_its_timeout(
    admin: Admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models_view, "TEST_TIMEOUT", 0.3)
    (preset,) = (await admin.get("/api/models/presets")).json["presets"]
    admin.llm.script(Hang())
    hung = await admin.post(f"/api/models/{preset['id']}/test")
    assert hung.json["ok"] is False and hung.json["kind"] == "timeout"


async def test_a_turn_goes_to_its_connection_and_the_global_model_stays_where_it_was(
    start_admin: StartAdmin, hosted: FakeLLMServer
) -> None:
    # The global model is Ollama on the shared loopback server with LLM_API_KEY set; the
    # hosted connection has its own address and key: neither key reaches the other server.
    admin = await start_admin(llm_api_key=API_KEY)
    await _create(
        admin,
        label="Hosted",
        value="openai/gpt-test",
        api_base=hosted.openai_base,
        api_key=HOSTED_KEY,
    )
    services = admin.services
    space = services.settings().local_space_id
    await services.spaces.set_default_model(space, "openai/gpt-test")
    hosted.script(Text("From the hosted model."))
    reply = await admin.post("/api/chat/stream", {"message": "hello"})
    assert reply.status == 200, reply.text
    assert answer(reply.text) == "From the hosted model."
    (request,) = hosted.chat_requests
    assert request.model == "gpt-test"
    assert request.headers["Authorization"] == f"Bearer {HOSTED_KEY}"

    await services.spaces.set_default_model(space, None)
    admin.llm.script(Text("From Ollama."))
    again = await admin.post("/api/chat/stream", {"message": "and now?"})
    assert answer(again.text) == "From Ollama."
    assert admin.llm.chat_requests[-1].model == "test-model"
    assert len(hosted.chat_requests) == 1
    assert API_KEY not in str(hosted.requests[0].headers)
