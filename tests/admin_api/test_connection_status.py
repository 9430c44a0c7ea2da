"""Every model connection on the status report (reachable or not, and why), and a connection's
test naming the address it called and the kind of failure: unreachable, a refused key, a
missing model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.admin_api.conftest import Admin
from tests.admin_api.test_model_connections import closed_port_url
from tests.fakes.llm_server import FakeLLMServer, Text

KEY = "sk-right-key-0123456789"


@pytest.fixture
async def guarded() -> AsyncIterator[FakeLLMServer]:
    """An OpenAI-compatible loopback server that wants KEY."""
    async with FakeLLMServer(models=("gpt-test",)) as server:
        server.required_key = KEY
        yield server


async def _presets(admin: Admin, guarded: FakeLLMServer) -> dict[str, dict[str, Any]]:
    away = closed_port_url()
    bodies = [
        {"label": "Away", "value": "ollama/other-model", "api_base": away},
        {"label": "Missing", "value": "ollama/never-pulled"},
        {"label": "Hosted", "value": "openai/gpt-test", "api_base": guarded.openai_base,
         "api_key": KEY},
        {"label": "Wrong key", "value": "openai/gpt-other", "api_base": guarded.openai_base,
         "api_key": "sk-wrong-key-987654321"},
    ]  # fmt: skip
    made = {}
    for body in bodies:
        reply = await admin.post("/api/models/presets", body)
        assert reply.status == 201, reply.text
        made[str(body["label"])] = reply.json
    return made


def _component(body: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in body["components"] if c["name"] == name)


def away_of(made: dict[str, Any]) -> str:
    """The address of the connection nothing listens on."""
    return str(made["Away"]["api_base"])


async def test_status_lists_each_connection_with_why_it_is_down(
    admin: Admin, guarded: FakeLLMServer
) -> None:
    made = await _presets(admin, guarded)
    checked = await admin.post("/api/readiness/check")
    assert checked.status == 200, checked.text
    status = (await admin.get("/api/status")).json
    connections = _component(status, "connections")
    parts = {part["name"]: part for part in connections["parts"]}
    # The fixture's own preset (the .env model) is there too, and works.
    assert {p["name"]: p["state"] for p in connections["parts"]} == {
        **{name: parts[name]["state"] for name in parts if name not in made},
        "Away": "down",
        "Missing": "down",
        "Hosted": "ok",
        "Wrong key": "down",
    }
    assert all(parts[name]["state"] == "ok" for name in parts if name not in made)
    away = made["Away"]["api_base"]
    assert "not reachable (connection refused)" in parts["Away"]["detail"]
    assert away in parts["Away"]["detail"]
    assert parts["Away"]["last_error"] == "connection refused"
    assert "never-pulled is not on the Ollama server" in parts["Missing"]["detail"]
    assert parts["Missing"]["last_error"] == "never-pulled not found"
    assert "rejected the API key (HTTP 401)" in parts["Wrong key"]["detail"]
    assert "the connection's key" in parts["Wrong key"]["detail"]
    # Nobody uses them (not LLM_MODEL, no space's default): a note, not a degraded bot.
    assert connections["state"] == "ok"
    assert connections["facts"]["connections"] == len(parts)
    assert "Not answering, used by nobody: Away, Missing, Wrong key." in connections["detail"]
    # Only the probe's own key reached the guarded server, never the wrong one's text back.
    assert "sk-wrong-key" not in str(status) and KEY not in str(status)
    assert status["status"] == "ok"
    # Each dead one warns on its own card (the Connections list), with the address.
    listed = {p["label"]: p for p in (await admin.get("/api/models/presets")).json["presets"]}
    assert listed["Away"]["state"] == "down" and away_of(made) in listed["Away"]["warning"]
    assert listed["Hosted"]["state"] == "ok" and listed["Hosted"]["warning"] is None

    # A space that uses one makes it matter: the bot is degraded.
    space = admin.services.settings().local_space_id
    used = {"default_model": made["Away"]["value"]}
    assert (await admin.patch(f"/api/spaces/{space}", used)).status == 200
    await admin.post("/api/readiness/check")
    status = (await admin.get("/api/status")).json
    connections = _component(status, "connections")
    assert connections["state"] == "degraded" and "Down: Away." in connections["detail"]
    assert "used by nobody: Missing, Wrong key." in connections["detail"]
    assert status["status"] == "degraded", "a troubled extra connection does not stop answers"
    assert (await admin.patch(f"/api/spaces/{space}", {"default_model": None})).status == 200

    # Deleting the broken connections clears the report by itself (re-checked in background).
    for name in ("Away", "Missing", "Wrong key"):
        assert (await admin.delete(f"/api/models/presets/{made[name]['id']}")).status == 200
    await admin.services.tasks.drain()
    again = _component((await admin.get("/api/status")).json, "connections")
    assert again["state"] == "ok" and {p["name"] for p in again["parts"]} >= {"Hosted"}
    assert "Away" not in {p["name"] for p in again["parts"]}


async def test_a_connection_test_names_the_address_and_the_kind_of_failure(
    admin: Admin, guarded: FakeLLMServer
) -> None:
    made = await _presets(admin, guarded)

    away = (await admin.post(f"/api/models/{made['Away']['id']}/test")).json
    assert (away["ok"], away["kind"], away["address"]) == (
        False,
        "unreachable",
        made["Away"]["api_base"],
    )

    missing = (await admin.post(f"/api/models/{made['Missing']['id']}/test")).json
    assert (missing["ok"], missing["kind"]) == (False, "not_found"), missing
    assert missing["address"] == admin.services.settings().llm_api_base

    refused = (await admin.post(f"/api/models/{made['Wrong key']['id']}/test")).json
    assert (refused["ok"], refused["kind"], refused["address"]) == (
        False,
        "auth",
        guarded.openai_base,
    ), refused

    guarded.script(Text("OK"))
    works = (await admin.post(f"/api/models/{made['Hosted']['id']}/test")).json
    assert (works["ok"], works["kind"], works["address"]) == (True, "ok", guarded.openai_base)


async def test_the_model_card_probes_the_connection_in_use(
    admin: Admin, guarded: FakeLLMServer
) -> None:
    """After a switch to a connection with its own address, the Model card checks that
    address (and key), not LLM_API_BASE's: the report never says "every part works" over a
    model card reading HTTP 404 from `.env`'s server."""
    await _presets(admin, guarded)
    reply = await admin.put("/api/settings", {"values": {"llm_model": "openai/gpt-test"}})
    assert reply.status == 200, reply.text
    checked = await admin.post("/api/readiness/check")
    assert checked.status == 200, checked.text
    model = _component((await admin.get("/api/status")).json, "model")
    # The guarded server answers only KEY: ok means the connection's own key went there.
    assert model["state"] == "ok", model
    assert guarded.openai_base in model["detail"] and "gpt-test" in model["detail"]
    assert KEY not in str(model)
