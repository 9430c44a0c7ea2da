"""SpaceService: purging a space (rows and files) leaves every other space intact; moving a note
page or a knowledge entry (with its file) to another space; per-space settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.chat.engine import TurnRequest
from bot.errors import NotFoundError
from bot.services import ServiceOptions, Services, open_services
from bot.store.spaces import ALL_SPACES
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text

A = "guild:100"
B = "guild:200"
HITS = [{"title": "Forecast", "href": "https://weather.example/", "body": "Sunny"}]


@pytest.fixture
async def services(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> AsyncIterator[Services]:
    async with open_services(make_settings(), service_options) as opened:
        yield opened


async def fill(services: Services, llm: FakeLLMServer, space: str, word: str) -> None:
    """A session with messages and tags, a note, a knowledge entry with its file, a topic
    channel with pool words."""
    session = await services.repos.sessions.create(space, title=word)
    message = await services.repos.messages.add(space, session.id, "user", f"{word} talk")
    await services.tagger.tag_message(space, message.id, message.content)
    await services.notes.create(space, f"{word} page", f"{word} body")
    llm.script(Text(f"# {word} weather\n- sunny"))
    assert await services.knowledge.save_search(space, f"{word} q", HITS, session_id=None)
    channel = 10 if space == A else 20
    await services.topics.configure(channel, {"enabled": True}, space=space)
    await services.topics.record_activity(space, channel, f"{word}が好き")


def files_of(services: Services, space_dir: str) -> list[Path]:
    folder = services.settings().kb_dir / "web_search" / space_dir
    return sorted(folder.glob("*.md")) if folder.exists() else []


async def rows_in(services: Services, space: str) -> int:
    total = 0
    for table in ("sessions", "messages", "message_tags", "note_pages", "knowledge_entries"):
        total += int(
            await services.db.scalar(f"SELECT COUNT(*) FROM {table} WHERE space_id = ?", (space,))
        )
    return total


async def test_purge_removes_rows_and_files_of_one_space_only(
    services: Services, llm: FakeLLMServer
) -> None:
    await fill(services, llm, A, "ramen")
    await fill(services, llm, B, "camera")
    rows_b = await rows_in(services, B)
    files_b = files_of(services, "guild_200")
    assert len(files_of(services, "guild_100")) == 1 and len(files_b) == 1
    rebuilt: list[str] = []

    async def rebuild() -> None:
        rebuilt.append("jobs")

    services.topics.add_change_listener(rebuild)

    report = await services.spaces.purge_space(A)
    assert report.files == 1 and report.rows["sessions"] == 1
    assert report.rows["knowledge_entries"] == 1 and report.rows["word_pool"] >= 1
    assert await rows_in(services, A) == 0
    assert files_of(services, "guild_100") == []
    assert not (services.settings().kb_dir / "web_search" / "guild_100").exists()
    assert await services.notes.list_pages(A) == []
    assert await services.spaces.get(A) is None
    assert rebuilt == ["jobs"], "the scheduler drops A's channel"
    assert [c.channel_id for c in await services.topics.repo.channels(ALL_SPACES)] == [20]

    assert await rows_in(services, B) == rows_b
    assert files_of(services, "guild_200") == files_b
    assert [page.title for page in await services.notes.list_pages(B)] == ["camera page"]
    assert [w.word for w in await services.word_pool.words(B, 20)] == ["camera"]
    with pytest.raises(NotFoundError):
        await services.spaces.purge_space(A)


async def test_move_a_note_and_a_knowledge_entry(services: Services, llm: FakeLLMServer) -> None:
    await fill(services, llm, A, "ramen")
    (page,) = await services.notes.list_pages(A)
    moved = await services.spaces.move_note(A, page.id, B)
    assert moved.space_id == B and await services.notes.find(A, "ramen page") is None
    assert (await services.notes.find(B, "ramen page")) == moved, "outline cache dropped"

    (entry,) = await services.knowledge.list(A)
    given = await services.spaces.move_knowledge(A, entry.id, B)
    assert given.space_id == B and files_of(services, "guild_100") == []
    (path,) = files_of(services, "guild_200")
    assert given.md_path == f"web_search/guild_200/{path.name}"
    with pytest.raises(NotFoundError):
        await services.spaces.move_knowledge(A, entry.id, B)


async def test_space_rows_names_and_the_default_model(
    services: Services, llm: FakeLLMServer
) -> None:
    record = await services.spaces.ensure(A, "Ramen Club")
    assert (record.kind, record.discord_id, record.name) == ("guild", 100, "Ramen Club")
    await services.spaces.set_default_model(A, "ollama/other-model")
    llm.script(Text("from the other model"), Text("from the default model"))
    for space in (A, B):
        [e async for e in services.engine.run_turn(TurnRequest("hi", space_id=space))]
    first, second = llm.chat_requests[-2:]
    assert first.model == "other-model", "A's turns use A's default model"
    assert second.model == "test-model", "B keeps the global default"
    ids = [r.id for r in await services.spaces.list()]
    assert ids[0] == "local:local" and {A, B} <= set(ids)
