"""/knowledge regenerate through the real discord.py client, with the built-in web tools reading
the entry's sources again from the loopback web server; /model set with the seeded preset."""

from __future__ import annotations

import pytest

from bot.services import ServiceOptions
from bot.store.repos.knowledge import KnowledgeEntry
from bot.tools.safe_http import FetchPolicy
from tests.conftest import FAST_RETRY
from tests.discord.conftest import World, WorldFactory
from tests.fakes.llm_server import Text
from tests.fakes.web_server import FakeWebServer


@pytest.fixture
def service_options() -> ServiceOptions:
    """The bot's services with the web tools on, allowed to reach loopback pages."""
    return ServiceOptions(
        retry=FAST_RETRY,
        fetch_policy=FetchPolicy.allowing("127.0.0.1/32"),
        search_fn=lambda query, n: [],
    )


async def saved(w: World, web: FakeWebServer) -> KnowledgeEntry:
    w.llm.script(Text("# Old title\n- old fact"))
    hits = [{"title": "Notes", "href": web.url_for("/notes.txt"), "body": "snippet"}]
    entry = await w.services.knowledge.save_search(w.space, "tea harvest", hits, session_id=None)
    assert entry is not None
    return entry


async def test_admins_regenerate_an_entry_from_its_sources(
    world: WorldFactory, web: FakeWebServer
) -> None:
    async with world() as w:
        entry = await saved(w, web)
        ix = await w.server.inject_interaction(
            "knowledge regenerate", {"entry": entry.id}, user=w.server.user
        )
        refused = await w.server.wait_for_reply(ix)
        assert refused.ephemeral and "Manage Server" in refused.content
        assert await w.services.knowledge.get(w.space, entry.id) == entry, (
            "members cannot regenerate"
        )
        assert web.requests == []

        admin = w.server.admin_user
        ix = await w.server.inject_interaction(
            "knowledge regenerate", {"entry": entry.id}, user=admin
        )
        failed = await w.server.wait_for_reply(ix)
        assert failed.ephemeral
        assert f"Could not regenerate knowledge entry #{entry.id}" in failed.content
        assert await w.services.knowledge.get(w.space, entry.id) == entry

        web.add_page("/notes.txt", "First flush: late April.", content_type="text/plain")
        w.llm.script(Text("# Tea harvest\n- first flush in late April"))
        ix = await w.server.inject_interaction(
            "knowledge regenerate", {"entry": entry.id}, user=admin
        )
        done = await w.server.wait_for_reply(ix)
        assert done.content.startswith(f"♻️ Regenerated knowledge entry #{entry.id}")
        assert f"**#{entry.id} Tea harvest**" in done.content
        assert "first flush in late April" in done.content and not done.pings()
        assert "First flush: late April." in w.llm.chat_requests[-1].messages[-1]["content"]
        updated = await w.services.knowledge.get(w.space, entry.id)
        assert updated is not None and updated.title == "Tea harvest"

        ix = await w.server.inject_interaction("knowledge regenerate", {"entry": 999}, user=admin)
        assert "No knowledge entry #999." in (await w.server.wait_for_reply(ix)).content


async def test_model_set_works_out_of_the_box(world: WorldFactory) -> None:
    async with world() as w:
        ix = await w.server.inject_interaction(
            "model set", {"value": "test"}, user=w.server.admin_user, autocomplete="value"
        )
        choices = await w.server.wait_for(lambda: ix.choices)
        assert [c["value"] for c in choices] == ["ollama/test-model"]
        ix = await w.server.inject_interaction(
            "model set", {"value": "ollama/test-model"}, user=w.server.admin_user
        )
        reply = (await w.server.wait_for_reply(ix)).content
        assert "default model" in reply and "ollama/test-model" in reply
