"""POST /api/memory/knowledge/{id}/regenerate over a real socket, with the built-in web tools
reading the sources again from the loopback web server; model presets seeded at first start."""

from __future__ import annotations

import pytest

from bot.services import ServiceOptions, open_services
from bot.store.repos.knowledge import KnowledgeEntry
from bot.tools.safe_http import FetchPolicy
from tests.admin_api.conftest import Admin
from tests.conftest import FAST_RETRY, LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.fakes.web_server import FakeWebServer


@pytest.fixture
def service_options() -> ServiceOptions:
    """The admin API's services with the web tools on, allowed to reach loopback pages."""
    return ServiceOptions(
        retry=FAST_RETRY,
        fetch_policy=FetchPolicy.allowing("127.0.0.1/32"),
        search_fn=lambda query, n: [],
    )


async def saved(admin: Admin, web: FakeWebServer) -> KnowledgeEntry:
    admin.llm.script(Text("# Old title\n- old fact"))
    hits = [{"title": "Notes", "href": web.url_for("/notes.txt"), "body": "snippet"}]
    entry = await admin.services.knowledge.save_search(LOCAL, "tea harvest", hits, session_id=None)
    assert entry is not None
    return entry


async def test_regenerate_replaces_the_entry_under_the_same_id(
    admin: Admin, web: FakeWebServer
) -> None:
    entry = await saved(admin, web)
    web.add_page(
        "/notes.txt", "The first flush is picked in late April.", content_type="text/plain"
    )
    admin.llm.script(Text("# Tea harvest\n- first flush in late April"))
    reply = await admin.post(f"/api/memory/knowledge/{entry.id}/regenerate")
    assert reply.status == 200, reply.text
    assert reply.json["id"] == entry.id
    assert (reply.json["title"], reply.json["summary"]) == (
        "Tea harvest",
        "- first flush in late April",
    )
    assert reply.json["sources"] == [{"title": "Notes", "url": web.url_for("/notes.txt")}]
    sent = admin.llm.chat_requests[-1].messages[-1]["content"]
    assert "The first flush is picked in late April." in sent
    read = await admin.get(f"/api/memory/knowledge/{entry.id}")
    assert read.json == reply.json


async def test_regenerate_errors(admin: Admin, web: FakeWebServer) -> None:
    entry = await saved(admin, web)  # /notes.txt is not served: 404
    unreadable = await admin.post(f"/api/memory/knowledge/{entry.id}/regenerate")
    assert unreadable.status == 502
    assert unreadable.json["error"] == "sources_unreadable"
    assert "could be read again" in unreadable.json["detail"]
    assert (await admin.get(f"/api/memory/knowledge/{entry.id}")).json["title"] == "Old title"

    missing = await admin.post("/api/memory/knowledge/999/regenerate")
    assert (missing.status, missing.json["error"]) == (404, "not_found")
    refused = await admin.post(
        f"/api/memory/knowledge/{entry.id}/regenerate",
        token=None,
        headers={"Origin": admin.origin},
    )
    assert refused.status == 401, "signed-in admins only"

    spec = (await admin.get("/api/openapi.json")).json
    operation = spec["paths"]["/api/memory/knowledge/{id}/regenerate"]["post"]
    assert operation["summary"] == "Regenerate a knowledge entry"


async def test_the_configured_model_is_the_first_preset(admin: Admin) -> None:
    listed = await admin.get("/api/models/presets")
    assert [(p["label"], p["value"]) for p in listed.json["presets"]] == [
        ("test-model", "ollama/test-model")
    ]


async def test_presets_are_seeded_when_there_are_none_and_the_configured_model_is_kept(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    settings = make_settings()
    async with open_services(settings, service_options) as services:
        (first,) = await services.repos.presets.list()
        assert (first.label, first.value) == ("test-model", "ollama/test-model")
        await services.repos.presets.create("Other", "ollama/other-model")
    async with open_services(settings, service_options) as services:
        presets = await services.repos.presets.list()
        assert [p.value for p in presets] == ["ollama/test-model", "ollama/other-model"]
        for preset in presets:
            await services.repos.presets.delete(preset.id)
        await services.repos.presets.create("Only", "ollama/other-model")
    # The configured model is always listed: a start with another LLM_MODEL adds it beside
    # the connection someone made, and leaves that one as it was.
    async with open_services(
        settings.model_copy(update={"llm_model": "x"}), service_options
    ) as services:
        assert [p.value for p in await services.repos.presets.list()] == ["ollama/other-model", "x"]
    # A model string without a provider prefix is its own label.
    async with open_services(settings, service_options) as services:
        for preset in await services.repos.presets.list():
            await services.repos.presets.delete(preset.id)
        assert await services.repos.presets.seed("gpt-4o") is not None
        assert [(p.label, p.value) for p in await services.repos.presets.list()] == [
            ("gpt-4o", "gpt-4o")
        ]
        # The seeded connection follows a new LLM_MODEL; seeding the same model again adds nothing.
        assert await services.repos.presets.seed("other") is not None
        assert [(p.label, p.value) for p in await services.repos.presets.list()] == [
            ("other", "other")
        ]
        assert await services.repos.presets.seed("other") is None
