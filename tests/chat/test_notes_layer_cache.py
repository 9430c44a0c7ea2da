"""The notes layer keeps its draft (and its cuts) between turns: a new, renamed or deleted page,
a link made in this session, another session's links and another space's pages are all shown
as they are on the next turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.chat.context import ContextRequest
from bot.chat.layers import NoteTitlesLayer
from bot.config import Settings
from bot.memory.notes import NotesService
from bot.store.engine.database import Database
from bot.store.repos.notes import NoteRepository
from bot.store.repos.sessions import SessionRepository

S = "guild:1"
OTHER = "guild:2"


@pytest.fixture
async def db(suite_database_url: str) -> AsyncIterator[Database]:
    database = await Database.connect(suite_database_url)
    yield database
    await database.close()


def request(space: str, session_id: str, tmp_path: Path) -> ContextRequest:
    settings = Settings(_env_file=None, language="en", db_path=tmp_path / "t.db")  # type: ignore[call-arg]
    return ContextRequest(space, session_id, "hello", 1, settings)


async def lines(
    layer: NoteTitlesLayer, req: ContextRequest, budget: int | None = None
) -> list[str]:
    draft = await layer.draft(req)
    if draft is None:
        return []
    text = draft.text if budget is None else draft.fit(budget)
    return [] if text is None else text.splitlines()[1:]


async def test_each_change_to_the_pages_or_links_shows_on_the_next_turn(
    db: Database, tmp_path: Path
) -> None:
    notes = NotesService(NoteRepository(db))
    sessions = SessionRepository(db)
    here = request(S, (await sessions.create(S, title="h")).id, tmp_path)
    there = request(S, (await sessions.create(S, title="t")).id, tmp_path)
    layer = NoteTitlesLayer(notes)
    first = await notes.create(S, "First", "one")
    assert await lines(layer, here) == ["- First: one"]

    second = await notes.create(S, "Second", "two")
    assert await lines(layer, here) == ["- First: one", "- Second: two"]

    await notes.update(S, first.id, title="Renamed")
    assert await lines(layer, here) == ["- Renamed: one", "- Second: two"]

    await notes.link(S, here.session_id, second.id)
    assert await lines(layer, here) == ["- Renamed: one", "- Second (linked — full text below)"]
    assert await lines(layer, there) == ["- Renamed: one", "- Second: two"], "not its link"
    assert await lines(layer, here) == ["- Renamed: one", "- Second (linked — full text below)"]

    await notes.delete(S, first.id)
    assert await lines(layer, here) == ["- Second (linked — full text below)"]


async def test_another_spaces_pages_never_show(db: Database, tmp_path: Path) -> None:
    notes = NotesService(NoteRepository(db))
    sessions = SessionRepository(db)
    mine = request(S, (await sessions.create(S, title="m")).id, tmp_path)
    theirs = request(OTHER, (await sessions.create(OTHER, title="o")).id, tmp_path)
    layer = NoteTitlesLayer(notes)
    await notes.create(S, "Mine", "a")
    await notes.create(OTHER, "Theirs", "b")

    assert await lines(layer, mine) == ["- Mine: a"]
    assert await lines(layer, theirs) == ["- Theirs: b"]
    await notes.create(OTHER, "Later", "c")
    assert await lines(layer, mine) == ["- Mine: a"]
    assert await lines(layer, theirs) == ["- Theirs: b", "- Later: c"]


async def test_a_cut_counts_the_pages_left_out_after_a_page_is_added(
    db: Database, tmp_path: Path
) -> None:
    notes = NotesService(NoteRepository(db))
    here = request(S, (await SessionRepository(db).create(S, title="h")).id, tmp_path)
    layer = NoteTitlesLayer(notes)
    for n in range(30):
        await notes.create(S, f"Page number {n:02d}", "body text " * 5)
    budget = 150
    before = await lines(layer, here, budget)
    shown = sum(1 for line in before if line.startswith("- Page"))
    assert 0 < shown < 30

    await notes.create(S, "Page number 30", "body")
    after = await lines(layer, here, budget)

    assert sum(1 for line in after if line.startswith("- Page")) == shown
    assert f"- … {30 - shown} more page(s)" in before[-1]
    assert f"- … {31 - shown} more page(s)" in after[-1]
