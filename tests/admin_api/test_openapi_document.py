"""The OpenAPI document is built on its first request, not when the admin API starts."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from admin_api import openapi, route_table
from admin_api.openapi import OpenApiDocument, build_openapi
from admin_api.routing import Route
from admin_api.state import ADMIN
from tests.admin_api.conftest import Admin


async def test_the_document_is_built_on_the_first_request_not_at_start(admin: Admin) -> None:
    state = admin.server.runner.app[ADMIN]
    assert not state.openapi.built  # serving started without it (~0.15 s of schema work)
    first = await admin.get("/api/openapi.json")
    assert first.status == 200
    assert state.openapi.built
    assert first.json == build_openapi(route_table())  # the whole document, as before
    again = await admin.get("/api/openapi.json")
    assert again.text == first.text


async def test_the_document_is_built_once_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[threading.Thread] = []

    def recording(routes: Sequence[Route]) -> dict[str, Any]:
        threads.append(threading.current_thread())
        return build_openapi(routes)

    monkeypatch.setattr(openapi, "build_openapi", recording)
    document = OpenApiDocument(route_table())
    results = await asyncio.gather(*(document.get() for _ in range(3)))
    assert len(threads) == 1 and threads[0] is not threading.main_thread()
    assert results[0] is results[1] is results[2]


async def test_put_settings_documents_its_body(admin: Admin) -> None:
    document = (await admin.get("/api/openapi.json")).json
    operation = document["paths"]["/api/settings"]["put"]
    assert '{"values": {"llm_api_base"' in operation["description"]
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = document["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    values = body["properties"]["values"]
    assert "null resets it" in values["description"]
    assert values["examples"] == [{"llm_api_base": "http://127.0.0.1:11434", "llm_api_key": None}]
