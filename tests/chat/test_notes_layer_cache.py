"""The notes layer keeps its draft (and its cuts) between turns: a new, renamed or deleted page,
a link made in this session, another session's links and another space's pages are all shown
as they are on the next turn. What it keeps costs the garbage collector nothing per page, and a
long outline is drawn off the event loop."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.chat import layers
from bot.chat.context import ContextRequest
from bot.chat.layers import NoteTitlesLayer, note_title_lines
from bot.config import Settings
from bot.memory.notes import NotesService
from bot.store.engine.database import Database
from bot.store.repos.notes import NoteRepository
from bot.store.repos.sessions import SessionRepository
from tests.collector import collector_work

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


async def test_a_kept_outline_and_draft_add_no_collector_work_per_page(
    db: Database, tmp_path: Path
) -> None:
    pages = 400
    notes = NotesService(NoteRepository(db))
    here = request(S, (await SessionRepository(db).create(S, title="h")).id, tmp_path)
    for n in range(pages):
        await notes.create(S, f"Page {n:03d}", f"body of page {n}")
    await notes.create(OTHER, "Elsewhere", "body")
    layer = NoteTitlesLayer(notes)
    elsewhere = request(OTHER, (await SessionRepository(db).create(OTHER, title="o")).id, tmp_path)
    assert await layer.draft(elsewhere) is not None  # what any first draft brings in
    before = collector_work()

    draft = await layer.draft(here)

    assert draft is not None and f"- Page {pages - 1}: body of page {pages - 1}" in draft.text
    assert draft.fit(100) is not None, "its cuts still work"
    assert await layer.draft(here) is draft, "kept for the next turn"
    # Objects per page (or lists of every line) would add several references per page.
    assert collector_work() - before < pages // 4


async def test_a_long_outline_is_drawn_in_a_worker_thread_and_a_short_one_on_the_loop(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn_in: list[int] = []

    def recording(*args: Any, **kwargs: Any) -> list[str]:
        drawn_in.append(threading.get_ident())
        return note_title_lines(*args, **kwargs)

    monkeypatch.setattr(layers, "note_title_lines", recording)
    monkeypatch.setattr(layers, "OUTLINE_ON_LOOP", 2)
    notes = NotesService(NoteRepository(db))
    here = request(S, (await SessionRepository(db).create(S, title="h")).id, tmp_path)
    layer = NoteTitlesLayer(notes)
    for n in range(2):
        await notes.create(S, f"Page {n}", "body")
    assert await lines(layer, here) == ["- Page 0: body", "- Page 1: body"]
    assert set(drawn_in) == {threading.get_ident()}, "two pages: no thread hop"

    drawn_in.clear()
    await notes.create(S, "Page 2", "body")
    assert await lines(layer, here) == ["- Page 0: body", "- Page 1: body", "- Page 2: body"]
    assert drawn_in and threading.get_ident() not in drawn_in, "three pages: off the loop"
