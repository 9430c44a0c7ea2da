"""Context layers 1, 2, 2.5, 3: content at the seed's limits, marked cuts within any budget."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.chat.budget.tokens import estimate_tokens
from bot.chat.context import ContextRequest, Draft
from bot.chat.engine import TurnRequest
from bot.chat.layers import (
    KnowledgeHeadingsLayer,
    LinkedNotesLayer,
    LocalKBLayer,
    NoteTitlesLayer,
    default_layers,
)
from bot.config import Settings
from bot.memory.knowledge import KnowledgeService
from bot.memory.notes import NotesService
from bot.services import ServiceOptions, open_services
from bot.store.engine.database import Database
from bot.store.repos.knowledge import KnowledgeRepository, KnowledgeSource
from bot.store.repos.notes import NoteRepository
from bot.store.repos.sessions import SessionRepository
from bot.tools.paging import parse_token
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
async def db(suite_database_url: str) -> AsyncIterator[Database]:
    database = await Database.connect(suite_database_url)
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


def assert_fits_every_budget(draft: Draft) -> None:
    """Every cut stays within its budget; a cut is never the full text."""
    for budget in [*BUDGETS, draft.demand - 1, draft.demand]:
        text = draft.fit(budget)
        assert_within(text, budget)
        if budget >= draft.demand:
            assert text == draft.text


async def render(layer: object, request: ContextRequest, budget: int = 100_000) -> str | None:
    """The layer's text cut to `budget` tokens (None when it has nothing)."""
    draft = await layer.draft(request)  # type: ignore[attr-defined]
    return None if draft is None else draft.fit(budget)


# --------------------------------------------------------------------------- layer 1


async def test_knowledge_layer_lists_latest_headings_only(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path, knowledge_context_limit=3)
    knowledge = KnowledgeService(
        KnowledgeRepository(db), NeverCalled(), tmp_path / "kb", lambda: settings
    )
    layer = KnowledgeHeadingsLayer(knowledge)
    request = request_for(session_id, settings)
    assert await layer.draft(request) is None, "nothing saved yet"

    ids = await add_entries(db, 5)
    draft = await layer.draft(request)
    assert draft is not None
    header, *lines = draft.text.splitlines()
    assert header.startswith("[Accumulated knowledge") and "read_knowledge" in header
    assert [line.split(" (")[0] for line in lines] == [
        f"- [#{ids[4]}] Heading number 4",
        f"- [#{ids[3]}] Heading number 3",
        f"- [#{ids[2]}] Heading number 2",
    ]
    assert "secret body" not in draft.text and "src.example" not in draft.text

    assert draft.fit(draft.demand - 1) == (
        f"{header}\n- … 3 older heading(s) left out to fit the context window; "
        "read_knowledge() lists them."
    ), "a marker is longer than two headings: then it stands alone"
    assert_fits_every_budget(draft)
    off = request_for(session_id, settings_for(tmp_path, knowledge_context_limit=0))
    assert await layer.draft(off) is None

    five = await layer.draft(request_for(session_id, settings_for(tmp_path)))
    assert five is not None
    small = five.fit(estimate_tokens(header) + 10 + 26)
    assert small is not None
    newest = five.text.splitlines()[1:2]
    assert newest[0].startswith(f"- [#{ids[4]}] Heading number 4 (")
    assert small.splitlines()[1:] == [
        *newest,
        "- … 4 older heading(s) left out to fit the context window; read_knowledge() lists them.",
    ], "the oldest headings go first, counted"


async def test_knowledge_layer_drafts_the_seeds_15_headings(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path)
    knowledge = KnowledgeService(
        KnowledgeRepository(db), NeverCalled(), tmp_path / "kb", lambda: settings
    )
    await add_entries(db, 20)
    draft = await KnowledgeHeadingsLayer(knowledge).draft(request_for(session_id, settings))
    assert draft is not None and draft.text.count("\n- [#") == 15


# --------------------------------------------------------------------------- layers 2 and 2.5


async def test_note_titles_grouped_by_section_with_linked_marks(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    notes = NotesService(NoteRepository(db))
    settings = settings_for(tmp_path)
    layer = NoteTitlesLayer(notes)
    request = request_for(session_id, settings)
    assert await layer.draft(request) is None

    await notes.create(S, "Loose", "no section here")
    groceries = await notes.create(S, "Groceries", "milk, eggs\n\nbread " + "x" * 100, "Home")
    await notes.create(S, "Standup", "", "Work")
    await notes.create(S, "Chores", "vacuum", "Home")
    await notes.link(S, session_id, groceries.id)
    text = await render(layer, request)
    assert text is not None
    header, *lines = text.splitlines()
    assert "first 40 characters" in header
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
    other_text = await render(layer, other)
    assert other_text is not None
    assert "- Groceries: milk, eggs bread " + "x" * 23 + "…" in other_text
    assert "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" not in other_text

    for index in range(40):
        await notes.create(S, f"Page {index:02d}", "some words " * 10, "Bulk")
    draft = await layer.draft(request)
    assert draft is not None
    assert_fits_every_budget(draft)
    titles = draft.fit(draft.demand - 1)
    assert titles is not None and ": some words" not in titles
    assert titles.splitlines()[1] == (
        "[Previews left out to fit the context window: read_note(title) reads a page.]"
    )
    assert titles.count("- Page ") == 40, "every title still there"
    squeezed = draft.fit(150)
    assert squeezed is not None and ": some words" not in squeezed
    last = squeezed.splitlines()[-1]
    shown = squeezed.count("\n- ") - 1
    assert last == (
        f"- … {44 - shown} more page(s) left out to fit the context window: "
        "read_note with an empty title lists every page."
    ), "section lines are not counted as pages"


async def test_note_titles_ask_for_the_sessions_links_only_when_the_space_has_pages(
    db: Database, session_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = NotesService(NoteRepository(db))
    asked: list[str] = []
    linked_ids = notes.linked_page_ids

    async def counted(space: str, session: str) -> list[int]:
        asked.append(session)
        return await linked_ids(space, session)

    monkeypatch.setattr(notes, "linked_page_ids", counted)
    layer = NoteTitlesLayer(notes)
    request = request_for(session_id, settings_for(tmp_path))
    assert await layer.draft(request) is None
    assert asked == []
    page = await notes.create(S, "Groceries", "milk")
    await notes.link(S, session_id, page.id)
    draft = await layer.draft(request)
    assert draft is not None and "- Groceries (linked" in draft.text
    assert asked == [session_id]


async def test_linked_notes_full_text_up_to_the_seed_limit(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    notes = NotesService(NoteRepository(db))
    settings = settings_for(tmp_path, session_notes_content_limit=8000)
    layer = LinkedNotesLayer(notes)
    request = request_for(session_id, settings)
    long_page = await notes.create(S, "Long", "abc " * 2500)
    short_page = await notes.create(S, "Short", "tiny body")
    await notes.create(S, "Unlinked", "never shown")
    assert await layer.draft(request) is None

    await notes.set_links(S, session_id, [long_page.id, short_page.id])
    draft = await layer.draft(request)
    assert draft is not None
    text = draft.text
    assert text.startswith("[Linked notes")
    assert "### Long\n" in text and "### Short\ntiny body" in text
    assert "never shown" not in text
    long_body = text.split("### Long\n", 1)[1].split("\n[…", 1)[0]
    assert long_body == ("abc " * 2500)[:8000], "the seed's 8,000 characters, whole"
    assert (
        f'[… 8,000 of 10,000 characters shown; read_note("#{long_page.id}", offset=8000) '
        "returns the rest.]" in text
    )

    tight = draft.fit(300)
    assert tight is not None and "### Short\ntiny body" in tight, "a long page cannot crowd out"
    shown = tight.split("### Long\n", 1)[1].split("\n[…", 1)[0]
    assert shown and ("abc " * 2500).startswith(shown)
    assert f"[… {len(shown):,} of 10,000 characters shown; " in tight
    assert f'read_note("#{long_page.id}", offset={len(shown)}) returns the rest.]' in tight
    assert_fits_every_budget(draft)


async def test_a_linked_note_with_no_room_for_its_body_keeps_its_heading_and_marker(
    db: Database, session_id: str, tmp_path: Path
) -> None:
    notes = NotesService(NoteRepository(db))
    page = await notes.create(S, "Plan", "step " * 400)
    await notes.link(S, session_id, page.id)
    draft = await LinkedNotesLayer(notes).draft(request_for(session_id, settings_for(tmp_path)))
    assert draft is not None
    text = draft.fit(60)
    assert text is not None and text.endswith(
        f'### Plan\n[… 0 of 2,000 characters shown; read_note("#{page.id}", offset=0) '
        "returns the rest.]"
    )


# --------------------------------------------------------------------------- layer 3


async def test_local_kb_layer_wraps_search_and_keeps_files_whole(
    session_id: str, tmp_path: Path
) -> None:
    settings = settings_for(tmp_path)
    queries: list[str] = []
    ramen = "Tonkotsu is pork broth. " * 200

    async def search(query: str, space: str) -> Sequence[Hit]:
        assert space == S
        queries.append(query)
        return [
            Hit("guide/ramen.md", "Ramen guide", ramen, 0.91),
            Hit("faq.md", "FAQ", "Opening hours: 9-17.", 0.8),
        ]

    layer = LocalKBLayer(search)
    draft = await layer.draft(request_for(session_id, settings, "ramen?"))
    assert queries == ["ramen?"]
    assert draft is not None
    header = draft.text.splitlines()[0]
    assert "outrank web search" in header and "do not search" in header
    assert f"### Ramen guide (guide/ramen.md)\n{ramen}\n\n" in draft.text, "the whole file"
    assert draft.text.endswith("### FAQ (faq.md)\nOpening hours: 9-17.")

    cut = draft.fit(600)
    assert cut is not None and "### FAQ (faq.md)\nOpening hours: 9-17." in cut
    shown = cut.split("(guide/ramen.md)\n", 1)[1].split("\n[…", 1)[0]
    assert ramen.startswith(shown)
    marker = (
        f"[… {len(shown):,} of {len(ramen):,} characters of this file shown, "
        'to fit the context window; read_kb_file(continue_from="'
    )
    assert marker in cut
    token = cut.split(marker, 1)[1].split('"', 1)[0]
    assert parse_token(token, "read_kb_file") == {
        "v": 2,
        "tool": "read_kb_file",
        "path": "guide/ramen.md",
        "offset": len(shown),
    }, "the marker's token reads on where the layer stopped"
    assert_fits_every_budget(draft)
    assert await layer.draft(request_for(session_id, settings, "  ")) is None

    async def broken(query: str, space: str) -> Sequence[Hit]:
        raise RuntimeError("index corrupt")

    assert await LocalKBLayer(broken).draft(request_for(session_id, settings)) is None


async def test_japanese_texts(db: Database, session_id: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path, language="ja")
    notes = NotesService(NoteRepository(db))
    page = await notes.create(S, "買い物", "牛乳と卵" * 100)
    text = await render(NoteTitlesLayer(notes), request_for(session_id, settings))
    assert text is not None and text.startswith("[共有ノート") and "- 買い物: 牛乳と卵" in text
    assert "先頭 40 文字" in text
    await notes.link(S, session_id, page.id)
    draft = await LinkedNotesLayer(notes).draft(request_for(session_id, settings))
    assert draft is not None
    cut = draft.fit(100)
    assert cut is not None and "文字を表示。続きは read_note(" in cut


def test_default_layers_follow_the_seeds_order() -> None:
    layers = default_layers(NotesOnly(), NotesOnly(), _no_search)  # type: ignore[arg-type]
    assert [layer.name for layer in layers] == [
        "knowledge",
        "notes",
        "linked_notes",
        "local_kb",
    ]
    assert default_layers(None, None) == []


class NotesOnly:
    """Stands in for the services default_layers only stores."""


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
