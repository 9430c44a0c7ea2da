"""Context layers 1, 2, 2.5, 3: content, layer order, and every render within its token budget."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.chat.context import MEMORY_SHARE, ContextRequest
from bot.chat.engine import TurnRequest
from bot.chat.tokens import estimate_tokens
from bot.config import Settings
from bot.memory.knowledge import KnowledgeService
from bot.memory.layers import (
    KnowledgeHeadingsLayer,
    LinkedNotesLayer,
    LocalKBLayer,
    NoteTitlesLayer,
    default_layer_slots,
)
from bot.memory.notes import NotesService
from bot.services import ServiceOptions, open_services
from bot.store.db import Database
from bot.store.knowledge import KnowledgeRepository, KnowledgeSource
from bot.store.sessions import SessionRepository
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text

S = "local:local"
BUDGETS = [0, 1, 5, 20, 37, 60, 90, 150, 240, 400, 800, 2000, 5000]


class NeverCalled:
    """A completer for services whose LLM must not be used here."""

    async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        pytest.fail("layers must not call the LLM")


@dataclass(frozen=True)
class Hit:
    path: str
    title: str
    content: str
    score: float


def settings_for(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"db_path": tmp_path / "t.db", "kb_dir": tmp_path / "kb"}
    values.update({"language": "en", **overrides})
    return Settings(_env_file=None, **values)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "t.db")
    yield database
    await database.close()


@pytest.fixture
async def session_id(db: Database) -> str:
    return (await SessionRepository(db).create(S, title="t")).id


def request_for(session_id: str, settings: Settings, text: str = "hello") -> ContextRequest:
    return ContextRequest(S, session_id, text, 1, settings)


async def add_entries(db: Database, count: int) -> list[int]:
    repo = KnowledgeRepository(db)
    ids = []
    for index in range(count):
        entry = await repo.add(
            S,
            query=f"query {index}",
            title=f"Heading number {index}",
            summary=f"- secret body {index}",
            session_id=None,
            md_path=None,
            sources=[KnowledgeSource("src", f"https://src.example/{index}")],
        )
        ids.append(entry.id)
    return ids


def assert_within(text: str | None, budget: int) -> None:
    if text is not None:
        assert estimate_tokens(text) <= budget, (budget, estimate_tokens(text), text[:200])


# --------------------------------------------------------------------------- layer 1


async def test_knowledge_layer_lists_latest_headings_only(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, knowledge_context_limit=3)
    knowledge = KnowledgeService(db, NeverCalled(), tmp_path / "kb", lambda: settings)
    layer = KnowledgeHeadingsLayer(knowledge)
    request = request_for(session_id, settings)
    assert await layer.render(request, 500) is None, "nothing saved yet"

    ids = await add_entries(db, 5)
    text = await layer.render(request, 500)
    assert text is not None
    header, *lines = text.splitlines()
    assert header.startswith("[Accumulated knowledge") and "read_knowledge" in header
    assert [line.split(" (")[0] for line in lines] == [
        f"- [#{ids[4]}] Heading number 4",
        f"- [#{ids[3]}] Heading number 3",
        f"- [#{ids[2]}] Heading number 2",
    ]
    assert "secret body" not in text and "src.example" not in text

    small = await layer.render(request, estimate_tokens(header) + 14)
    assert small is not None and small.count("\n") == 1, "the oldest headings go first"
    assert "Heading number 4" in small
    for budget in BUDGETS:
        assert_within(await layer.render(request, budget), budget)
    off = request_for(session_id, settings_for(tmp_path, knowledge_context_limit=0))
    assert await layer.render(off, 500) is None


# --------------------------------------------------------------------------- layers 2 and 2.5


async def test_note_titles_grouped_by_section_with_linked_marks(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    notes = NotesService(db)
    settings = settings_for(tmp_path)
    layer = NoteTitlesLayer(notes)
    request = request_for(session_id, settings)
    assert await layer.render(request, 500) is None

    await notes.create(S, "Loose", "no section here")
    groceries = await notes.create(S, "Groceries", "milk, eggs\n\nbread " + "x" * 100, "Home")
    await notes.create(S, "Standup", "", "Work")
    await notes.create(S, "Chores", "vacuum", "Home")
    await notes.link(S, session_id, groceries.id)
    text = await layer.render(request, 1000)
    assert text is not None
    header, *lines = text.splitlines()
    assert "read_note" in header and "write_note" in header and "(linked)" in header
    assert lines == [
        "## (no section)",
        "- Loose: no section here",
        "## Home",
        "- Groceries (linked — full text below)",
        "- Chores: vacuum",
        "## Work",
        "- Standup",
    ]
    other = request_for((await SessionRepository(db).create(S, title="o")).id, settings)
    other_text = await layer.render(other, 1000)
    assert other_text is not None
    assert "- Groceries: milk, eggs bread " + "x" * 23 + "…" in other_text
    assert "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" not in other_text

    for index in range(40):
        await notes.create(S, f"Page {index:02d}", "some words " * 10, "Bulk")
    for budget in BUDGETS:
        assert_within(await layer.render(request, budget), budget)
    squeezed = await layer.render(request, 150)
    assert squeezed is not None and "more page(s)" in squeezed and ": some words" not in squeezed


async def test_linked_notes_full_text_with_char_limit(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    notes = NotesService(db)
    settings = settings_for(tmp_path, session_notes_content_limit=8000)
    layer = LinkedNotesLayer(notes)
    request = request_for(session_id, settings)
    long_page = await notes.create(S, "Long", "abc " * 2500)
    short_page = await notes.create(S, "Short", "tiny body")
    await notes.create(S, "Unlinked", "never shown")
    assert await layer.render(request, 10_000) is None

    await notes.set_links(S, session_id, [long_page.id, short_page.id])
    text = await layer.render(request, 10_000)
    assert text is not None
    assert text.startswith("[Linked notes")
    assert "### Long\n" in text and "### Short\ntiny body" in text
    assert "never shown" not in text
    long_body = text.split("### Long\n", 1)[1].split("\n[…", 1)[0]
    assert len(long_body) <= 8000 and long_body.startswith("abc abc")
    assert "read_note(title) returns the rest" in text

    tight = await layer.render(request, 300)
    assert tight is not None and "tiny body" in tight, "a long page cannot crowd out others"
    for budget in BUDGETS:
        assert_within(await layer.render(request, budget), budget)


# --------------------------------------------------------------------------- layer 3


async def test_local_kb_layer_wraps_search(session_id: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    queries: list[str] = []

    async def search(query: str, space: str) -> Sequence[Hit]:
        queries.append(query)
        assert space == S
        return [
            Hit("guide/ramen.md", "Ramen guide", "Tonkotsu is pork broth. " * 200, 0.91),
            Hit("faq.md", "FAQ", "Opening hours: 9-17.", 0.8),
        ]

    layer = LocalKBLayer(search)
    text = await layer.render(request_for(session_id, settings, "ramen?"), 2000)
    assert queries == ["ramen?"]
    assert text is not None
    header = text.splitlines()[0]
    assert "outrank web search" in header and "do not search" in header
    assert "### Ramen guide (guide/ramen.md)" in text
    assert "### FAQ (faq.md)\nOpening hours: 9-17." in text
    for budget in BUDGETS:
        assert_within(await layer.render(request_for(session_id, settings, "q"), budget), budget)
    assert await layer.render(request_for(session_id, settings, "  "), 2000) is None

    async def broken(query: str, space: str) -> Sequence[Hit]:
        raise RuntimeError("index corrupt")

    assert await LocalKBLayer(broken).render(request_for(session_id, settings), 2000) is None


async def test_japanese_headers(db: Database, session_id: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, language="ja")
    notes = NotesService(db)
    await notes.create(S, "買い物", "牛乳と卵")
    text = await NoteTitlesLayer(notes).render(request_for(session_id, settings), 500)
    assert text is not None and text.startswith("[共有ノート") and "- 買い物: 牛乳と卵" in text


def test_default_slots_follow_layer_order_and_leave_room() -> None:
    slots = default_layer_slots(NotesOnly(), NotesOnly(), _no_search)  # type: ignore[arg-type]
    assert [slot.layer.name for slot in slots] == [
        "knowledge",
        "notes",
        "linked_notes",
        "local_kb",
    ]
    shares = {slot.layer.name: slot.share for slot in slots}
    assert shares["local_kb"] == max(shares.values())
    assert shares["knowledge"] == min(shares.values())
    assert sum(shares.values()) + MEMORY_SHARE <= 0.7 + 1e-9, "the conversation keeps ≥ 30 %"
    assert [s.layer.name for s in default_layer_slots(None, None)] == []


class NotesOnly:
    """Stands in for the services default_layer_slots only stores."""


async def _no_search(query: str, space: str) -> list[Hit]:
    return []


# --------------------------------------------------------------------------- through the engine


async def test_layers_reach_the_model_in_layer_order(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    settings = make_settings(llm_context_tokens=4096, local_kb_min_score=0.0)
    settings.kb_dir.mkdir(parents=True, exist_ok=True)
    (settings.kb_dir / "tea.md").write_text("# Tea\n\nGreen tea steeps at 80°C.\n", "utf-8")
    async with open_services(settings, service_options) as services:
        notes = services.notes
        llm.script(Text("first"))
        events = [e async for e in services.engine.run_turn(TurnRequest("tea?", space_id=S))]
        session_id = events[0].session_id  # type: ignore[union-attr]
        await add_entries(services.db, 2)
        page = await notes.create(S, "Tea notes", "Sencha from Shizuoka, bought in May.", "Food")
        await notes.create(S, "Other", "unrelated")
        await notes.link(S, session_id, page.id)

        llm.script(Text("second"))
        [
            e
            async for e in services.engine.run_turn(
                TurnRequest("more tea?", session_id, space_id=S)
            )
        ]
        messages = llm.chat_requests[-1].messages
        systems = [m["content"] for m in messages if m["role"] == "system"]
        starts = [text.splitlines()[0][:18] for text in systems[1:]]
        assert starts == [
            "[Accumulated knowl",
            "[Shared notes — pa",
            "[Linked notes — th",
            "[Local knowledge b",
        ]
        assert "Heading number 1" in systems[1]
        assert "- Tea notes (linked" in systems[2] and "- Other: unrelated" in systems[2]
        assert "Sencha from Shizuoka, bought in May." in systems[3]
        assert "Green tea steeps at 80°C." in systems[4]
        total = sum(estimate_tokens(json.dumps(m, ensure_ascii=False)) for m in messages)
        assert total < 4096
