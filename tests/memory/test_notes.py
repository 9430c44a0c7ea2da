"""Shared notes: contiguous sections, validated reorder, links, tools, and the engine round trip."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.chat.engine import TurnRequest
from bot.errors import ConflictError, NotFoundError, ValidationError
from bot.memory.notes import (
    MAX_CONTENT_CHARS,
    NoteOutline,
    NoteOutlines,
    NotePage,
    NotesService,
)
from bot.services import ServiceOptions, open_services
from bot.store.engine.database import Database
from bot.store.repos.notes import NoteRepository, is_contiguous
from bot.store.repos.sessions import SessionRepository
from bot.tools.notes_tools import (
    READ_CHUNK_CHARS,
    register_notes_tools,
)
from bot.tools.registry import ToolRegistry
from bot.turn.events import Event, NotesUpdatedEvent, SessionEvent, ToolEvent
from bot.utils.tasks import BackgroundTasks
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text, ToolCalls

S = "guild:1"
OTHER = "guild:2"
INJECTED = {"session_id": "s1", "space_id": S}


@pytest.fixture
async def db(suite_database_url: str) -> AsyncIterator[Database]:
    database = await Database.connect(suite_database_url)
    yield database
    await database.close()


@pytest.fixture
def notes(db: Database) -> NotesService:
    return NotesService(NoteRepository(db))


def layout(pages: list[NotePage]) -> list[tuple[str, str]]:
    return [(page.title, page.section) for page in pages]


def assert_invariant(pages: list[NotePage]) -> None:
    assert [page.position for page in pages] == list(range(len(pages)))
    assert is_contiguous([(page.id, page.section) for page in pages]), layout(pages)


async def make(notes: NotesService, *specs: tuple[str, str]) -> dict[str, int]:
    ids = {}
    for title, section in specs:
        ids[title] = (await notes.create(S, title, f"body of {title}", section)).id
    return ids


# --------------------------------------------------------------------------- sections & order


async def test_create_appends_at_end_of_its_section(notes: NotesService) -> None:
    await make(notes, ("a", "x"), ("b", "y"), ("c", "x"), ("d", ""), ("e", "y"))
    pages = await notes.list_pages(
        S,
    )
    assert layout(pages) == [("a", "x"), ("c", "x"), ("b", "y"), ("e", "y"), ("d", "")]
    assert_invariant(pages)


async def test_set_section_moves_to_end_of_target_and_renumbers(notes: NotesService) -> None:
    ids = await make(notes, ("a", "x"), ("b", "x"), ("c", "y"), ("d", "y"))
    pages = await notes.set_section(S, ids["a"], "y")
    assert layout(pages) == [("b", "x"), ("c", "y"), ("d", "y"), ("a", "y")]
    assert_invariant(pages)
    pages = await notes.set_section(S, ids["c"], "new")
    assert layout(pages) == [("b", "x"), ("d", "y"), ("a", "y"), ("c", "new")]
    assert_invariant(pages)
    with pytest.raises(NotFoundError):
        await notes.set_section(S, 999, "x")


async def test_sections_stay_contiguous_under_random_operations(notes: NotesService) -> None:
    rng = random.Random(2024)
    sections = ["", "work", "home", "ideas"]
    counter = 0
    for _ in range(120):
        pages = await notes.list_pages(
            S,
        )
        ids = [page.id for page in pages]
        op = rng.choice(["create", "create", "set_section", "reorder", "delete", "rename"])
        if op == "create" or not ids:
            counter += 1
            await notes.create(S, f"page {counter}", "x", rng.choice(sections))
        elif op == "set_section":
            await notes.set_section(S, rng.choice(ids), rng.choice(sections))
        elif op == "delete":
            assert await notes.delete(S, rng.choice(ids))
        elif op == "rename":
            present = sorted({page.section for page in pages})
            await notes.rename_section(S, rng.choice(present), rng.choice(sections))
        else:
            # A drag and drop as the client computes it: move one page into a target
            # section's run (at its end), keeping every run together.
            moved = rng.choice(pages)
            target = rng.choice(sections)
            rest = [page for page in pages if page.id != moved.id]
            last = max((i for i, p in enumerate(rest) if p.section == target), default=None)
            order = [page.id for page in rest]
            order.insert(len(order) if last is None else last + 1, moved.id)
            await notes.reorder(S, moved.id, target, order)
        assert_invariant(
            await notes.list_pages(
                S,
            )
        )
    assert counter > 10


async def test_reorder_applies_the_order_and_moves_the_page(notes: NotesService) -> None:
    ids = await make(notes, ("a", "x"), ("b", "x"), ("c", "y"))
    pages = await notes.reorder(S, ids["a"], "y", [ids["b"], ids["c"], ids["a"]])
    assert layout(pages) == [("b", "x"), ("c", "y"), ("a", "y")]
    assert_invariant(pages)
    pages = await notes.reorder(S, ids["c"], "y", [ids["c"], ids["a"], ids["b"]])
    assert layout(pages) == [("c", "y"), ("a", "y"), ("b", "x")]


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("missing", "missing"),
        ("extra", "unknown"),
        ("duplicate", "duplicated"),
        ("split", "split the section"),
        ("not_ints", "list of note page ids"),
    ],
)
async def test_reorder_with_a_wrong_id_set_is_refused_and_changes_nothing(
    notes: NotesService, case: str, fragment: str
) -> None:
    ids = await make(notes, ("a", "x"), ("b", "x"), ("c", "y"))
    a, b, c = ids["a"], ids["b"], ids["c"]
    orders: dict[str, list[Any]] = {
        "missing": [a, b],
        "extra": [a, b, c, 999],
        "duplicate": [a, b, c, a],
        "split": [a, c, b],
        "not_ints": [a, b, "c"],
    }
    before = await notes.list_pages(
        S,
    )
    with pytest.raises(ValidationError) as excinfo:
        await notes.reorder(S, c, "y", orders[case])
    assert fragment in str(excinfo.value)
    assert (
        await notes.list_pages(
            S,
        )
        == before
    )


async def test_rename_section_relabels_and_merges(notes: NotesService) -> None:
    await make(notes, ("a", "x"), ("b", "y"), ("c", "z"), ("d", "x"))
    assert await notes.rename_section(S, "x", "work") == 2
    assert layout(
        await notes.list_pages(
            S,
        )
    ) == [
        ("a", "work"),
        ("d", "work"),
        ("b", "y"),
        ("c", "z"),
    ]
    # Renaming onto an existing name merges the groups and keeps them together.
    assert await notes.rename_section(S, "z", "work") == 1
    pages = await notes.list_pages(
        S,
    )
    assert layout(pages) == [("a", "work"), ("d", "work"), ("c", "work"), ("b", "y")]
    assert_invariant(pages)
    with pytest.raises(NotFoundError):
        await notes.rename_section(S, "nope", "x")


async def test_delete_closes_the_gap(notes: NotesService) -> None:
    ids = await make(notes, ("a", ""), ("b", ""), ("c", ""))
    assert await notes.delete(S, ids["b"]) is True
    assert await notes.delete(S, ids["b"]) is False
    pages = await notes.list_pages(
        S,
    )
    assert layout(pages) == [("a", ""), ("c", "")]
    assert_invariant(pages)


# --------------------------------------------------------------------------- validation & lookup


async def test_titles_are_validated_and_unique(notes: NotesService) -> None:
    page = await notes.create(S, "  Shopping List  ", "milk")
    assert page.title == "Shopping List"
    with pytest.raises(ConflictError):
        await notes.create(S, "shopping list")
    for bad in ("", "   ", "x" * 101, "two\nlines"):
        with pytest.raises(ValidationError):
            await notes.create(S, bad)
    other = await notes.create(S, "Other")
    with pytest.raises(ConflictError):
        await notes.update(S, other.id, title="SHOPPING LIST")
    renamed = await notes.update(S, page.id, title="shopping list")  # its own title, new case
    assert renamed.title == "shopping list"
    with pytest.raises(NotFoundError):
        await notes.update(S, 999, content="x")


async def test_content_limit(notes: NotesService) -> None:
    with pytest.raises(ValidationError):
        await notes.create(S, "big", "x" * (MAX_CONTENT_CHARS + 1))
    page = await notes.create(S, "big", "x" * (MAX_CONTENT_CHARS - 5))
    with pytest.raises(ValidationError):
        await notes.append(S, page.id, "123456")
    assert (await notes.get(S, page.id)) == page
    appended = await notes.append(S, page.id, "1234")
    assert appended.content.endswith("x\n1234")


async def test_find_by_title_or_id_and_search(notes: NotesService) -> None:
    ids = await make(notes, ("Travel plans", ""), ("Trivia", ""), ("Old travel log", ""))
    found = await notes.find(S, "travel PLANS")
    assert found is not None and found.id == ids["Travel plans"]
    by_id = await notes.find(S, str(ids["Trivia"]))
    assert by_id is not None and by_id.title == "Trivia"
    by_hash = await notes.find(S, f"#{ids['Trivia']}")
    assert by_hash is not None and by_hash.title == "Trivia"
    assert await notes.find(S, "nothing") is None
    assert await notes.find(S, "  ") is None
    hits = await notes.search_titles(S, "tr")
    assert [page.title for page in hits] == ["Travel plans", "Trivia", "Old travel log"]
    assert [page.title for page in await notes.search_titles(S, "TRI")] == ["Trivia"]
    hits = await notes.search_titles(S, "travel")
    assert [page.title for page in hits] == ["Travel plans", "Old travel log"]
    assert len(await notes.search_titles(S, "", limit=2)) == 2


# --------------------------------------------------------------------------- session links


async def test_links_are_unique_per_session_and_page(db: Database, notes: NotesService) -> None:
    sessions = SessionRepository(db)
    one = (await sessions.create(S, title="one")).id
    two = (await sessions.create(S, title="two")).id
    ids = await make(notes, ("a", ""), ("b", ""), ("c", ""))
    assert await notes.link(S, one, ids["b"]) is True
    assert await notes.link(S, one, ids["b"]) is False
    assert await notes.link(S, two, ids["b"]) is True
    rows = await db.fetchall("SELECT session_id, page_id FROM session_note_pages")
    assert sorted((r[0], r[1]) for r in rows) == sorted([(one, ids["b"]), (two, ids["b"])])

    assert await notes.set_links(S, one, [ids["c"], ids["a"], ids["c"]]) == [ids["a"], ids["c"]]
    with pytest.raises(ValidationError):
        await notes.set_links(S, one, [ids["a"], 999])
    assert await notes.linked_page_ids(S, one) == [ids["a"], ids["c"]], "nothing changed"
    with pytest.raises(NotFoundError):
        await notes.link(S, "no-such-session", ids["a"])
    with pytest.raises(NotFoundError):
        await notes.link(S, one, 999)

    assert await notes.unlink(S, one, ids["a"]) is True
    assert await notes.unlink(S, one, ids["a"]) is False
    await notes.delete(S, ids["c"])
    assert await notes.linked_page_ids(S, one) == [], "links go with their page"
    assert await notes.linked_page_ids(S, two) == [ids["b"]]


# --------------------------------------------------------------------------- tools


async def test_tools_read_write_and_clear_errors(notes: NotesService) -> None:
    registry = ToolRegistry()
    writes: list[str | None] = []
    register_notes_tools(registry, notes, on_write=writes.append)
    assert {"read_note", "write_note"} <= set(registry.names())
    write_schema = next(s for s in registry.schemas() if s["function"]["name"] == "write_note")
    assert "session_id" not in write_schema["function"]["parameters"]["properties"]

    async def call(name: str, **args: object) -> str:
        result = await registry.execute(name, args, injected={"session_id": "s1", "space_id": S})
        assert not result.failed, result
        return result.text

    async def error(name: str, **args: object) -> str:
        """The message of a failed call (the model receives it as a JSON error object)."""
        result = await registry.execute(name, args, injected={"session_id": "s1", "space_id": S})
        assert result.failed, result
        return str(json.loads(result.text)["error"])

    missing = await error("read_note", title="Recipes")
    assert "No note page titled 'Recipes'" in missing
    assert "There are no pages yet" in missing
    assert "mode 'create'" in await error("write_note", title="Recipes", content="x")

    saved = await call(
        "write_note", title="Recipes", content="Curry", mode="create", section="Food"
    )
    assert saved.startswith("Saved note page 'Recipes'")
    assert writes == ["s1"]
    exists = await error("write_note", title="recipes", content="y", mode="create")
    assert "already exists" in exists and "'append'" in exists
    await call("write_note", title="Recipes", content="Ramen")
    assert (await call("read_note", title="recipes")).endswith("Curry\nRamen")
    await call("write_note", title="Recipes", content="Only soba", mode="replace")
    page = await notes.find(S, "Recipes")
    assert page is not None and page.content == "Only soba" and page.section == "Food"
    bad_mode = await error("write_note", title="Recipes", content="x", mode="delete")
    assert "mode" in bad_mode
    assert writes == ["s1", "s1", "s1"], "failed writes do not notify"
    assert "Existing pages: 'Recipes'" in await error("read_note", title="Nope")
    assert {registry.get(name).icon for name in ("read_note", "write_note")} == {"📝"}  # type: ignore[union-attr]


async def test_read_note_pages_through_a_long_page(notes: NotesService) -> None:
    registry = ToolRegistry()
    register_notes_tools(registry, notes)
    body = "".join(f"line {i:05d}\n" for i in range(1500))
    await notes.create(S, "Long", body)
    first = (await registry.execute("read_note", {"title": "Long"}, injected=INJECTED)).text
    assert len(first) < 6000
    assert f"offset={READ_CHUNK_CHARS}" in first
    second = (
        await registry.execute(
            "read_note", {"title": "Long", "offset": READ_CHUNK_CHARS}, injected=INJECTED
        )
    ).text
    chunk_one = first.split("\n", 1)[1].rsplit("\n[", 1)[0]
    chunk_two = second.split("\n", 1)[1].rsplit("\n[", 1)[0]
    assert body.startswith(chunk_one + chunk_two)


# --------------------------------------------------------------------------- end to end


async def test_write_then_read_note_through_the_engine(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    async with open_services(make_settings(), service_options) as services:
        llm.script(
            ToolCalls(
                [
                    (
                        "write_note",
                        {"title": "Trip", "content": "Kyoto in May", "mode": "create"},
                    )
                ]
            ),
            Text("Noted."),
        )
        events: list[Event] = [
            e async for e in services.engine.run_turn(TurnRequest("note my trip", space_id=LOCAL))
        ]
        session = events[0]
        assert isinstance(session, SessionEvent)
        tool_events = [e for e in events if isinstance(e, ToolEvent)]
        assert [(e.name, e.status) for e in tool_events] == [
            ("write_note", "running"),
            ("write_note", "done"),
        ]
        updated = [i for i, e in enumerate(events) if isinstance(e, NotesUpdatedEvent)]
        assert len(updated) == 1
        assert events.index(tool_events[1]) < updated[0]
        rows = await services.db.fetchall("SELECT title, content, space_id FROM note_pages")
        assert [tuple(r) for r in rows] == [("Trip", "Kyoto in May", LOCAL)]

        llm.script(ToolCalls([("read_note", {"title": "trip"})]), Text("You go to Kyoto."))
        events = [
            e
            async for e in services.engine.run_turn(
                TurnRequest("where do I go?", session.session_id, space_id=LOCAL)
            )
        ]
        assert not any(isinstance(e, NotesUpdatedEvent) for e in events), "reads do not notify"
        follow_up = llm.chat_requests[-1]
        tool_messages = [m for m in follow_up.messages if m["role"] == "tool"]
        assert len(tool_messages) == 1
        assert "# Trip" in tool_messages[0]["content"]
        assert "Kyoto in May" in tool_messages[0]["content"]


async def test_failed_write_emits_no_notes_updated(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    async with open_services(make_settings(), service_options) as services:
        llm.script(
            ToolCalls([("write_note", {"title": "Ghost", "content": "x", "mode": "append"})]),
            Text("That page does not exist."),
        )
        events = [
            e
            async for e in services.engine.run_turn(TurnRequest("append to ghost", space_id=LOCAL))
        ]
        statuses = [(e.name, e.status) for e in events if isinstance(e, ToolEvent)]
        assert statuses == [("write_note", "running"), ("write_note", "error")]
        assert not any(isinstance(e, NotesUpdatedEvent) for e in events)
        tool_message = next(m for m in llm.chat_requests[-1].messages if m["role"] == "tool")
        assert "No note page titled 'Ghost'" in tool_message["content"]


async def test_outline_is_cached_until_a_write_or_its_age_limit(db: Database) -> None:
    from bot.memory.notes import OUTLINE_CACHE_SECONDS

    now = [100.0]
    notes = NotesService(NoteRepository(db), clock=lambda: now[0])
    elsewhere = NoteRepository(db)  # another process's
    page = await notes.create(S, "First", "body")
    assert [item.title for item in await notes.outline(S)] == ["First"]
    await notes.update(S, page.id, title="Renamed")
    assert [item.title for item in await notes.outline(S)] == ["Renamed"], "own writes show at once"
    await elsewhere.update(S, page.id, title="Outside", content=None)
    assert [item.title for item in await notes.outline(S)] == ["Renamed"], "served from cache"
    now[0] += OUTLINE_CACHE_SECONDS + 1
    assert [item.title for item in await notes.outline(S)] == ["Outside"], "another process's write"
    with pytest.raises(ValidationError):
        await notes.create(S, "", "")
    await db.execute("UPDATE note_pages SET title = 'Again' WHERE id = ?", (page.id,))
    assert [item.title for item in await notes.outline(S)] == ["Again"], (
        "a failed write drops it too"
    )


class HeldOutlines(NoteRepository):
    """A note repository whose outline reads are counted; the next one can be held after it
    has read, before it returns."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.reads = 0
        self.hold: asyncio.Event | None = None
        self.holding = asyncio.Event()

    async def outline(self, space: str, preview_chars: int) -> NoteOutlines:
        self.reads += 1
        hold, self.hold = self.hold, None
        items = await super().outline(space, preview_chars)
        if hold is not None:
            self.holding.set()
            await hold.wait()
        return items


async def test_an_aged_outline_is_read_again_only_after_a_write_elsewhere(db: Database) -> None:
    """Once the cache is past its age limit, the space's note version is read; the pages are
    read again only when another process's write drew a new one. Unchanged, the very object
    cached is kept, so what a reader derived from it (the notes layer's draft) stays good."""
    from bot.memory.notes import OUTLINE_CACHE_SECONDS

    now = [100.0]
    repo = HeldOutlines(db)
    notes = NotesService(repo, clock=lambda: now[0])
    elsewhere = NoteRepository(db)
    page = await notes.create(S, "First", "body")
    first = await notes.outline_snapshot(S)
    reads = repo.reads
    now[0] += OUTLINE_CACHE_SECONDS + 1
    assert await notes.outline_snapshot(S) is first
    assert repo.reads == reads, "no write: the pages are not read"

    await elsewhere.update(S, page.id, title=None, content="changed")
    now[0] += OUTLINE_CACHE_SECONDS + 1
    changed = await notes.outline_snapshot(S)
    assert changed is not first and [item.preview for item in changed] == ["changed"]
    assert list(first) == [NoteOutline(page.id, "First", "", 0, "body", 4)]

    await elsewhere.update(S, page.id, title=None, content="changed")  # the same pages
    now[0] += OUTLINE_CACHE_SECONDS + 1
    assert await notes.outline_snapshot(S) is changed


async def test_every_note_write_draws_a_new_version_and_nothing_else_does(
    db: Database,
) -> None:
    repo = NoteRepository(db)
    session = (await SessionRepository(db).create(S, title="s")).id
    seen = [await repo.version(S)]

    async def drew(space: str = S) -> bool:
        version = await repo.version(space)
        new = version not in seen
        seen.append(version)
        return new

    page = await repo.create(S, "One", "body", "")
    assert await drew()
    other = await repo.create(S, "Two", "", "")
    assert await drew()
    await repo.update(S, page.id, title="Uno", content=None)
    assert await drew()
    await repo.append(S, page.id, "more", MAX_CONTENT_CHARS)
    assert await drew()
    await repo.set_section(S, page.id, "Later")
    assert await drew()
    await repo.rename_section(S, "Later", "Last")
    assert await drew()
    await repo.reorder(S, page.id, "Last", [other.id, page.id])
    assert await drew()
    await repo.link(S, session, page.id)
    await repo.all(S)
    await repo.outline(S, 40)
    assert not await drew(), "links and reads draw none"
    await repo.move(S, other.id, OTHER)
    assert await drew() and await drew(OTHER)
    await repo.delete(S, page.id)
    assert await drew()


async def test_with_background_tasks_an_aged_outline_is_read_again_after_the_turn(
    db: Database,
) -> None:
    from bot.memory.notes import OUTLINE_CACHE_SECONDS

    now = [100.0]
    repo = HeldOutlines(db)
    tasks = BackgroundTasks()
    notes = NotesService(repo, clock=lambda: now[0], tasks=tasks)
    page = await notes.create(S, "First", "body")
    first = await notes.outline_snapshot(S)
    await NoteRepository(db).update(S, page.id, title="Outside", content=None)
    now[0] += OUTLINE_CACHE_SECONDS + 1
    reads = repo.reads

    assert await notes.outline_snapshot(S) is first, "no turn waits for the read"
    assert await notes.outline_snapshot(S) is first
    await tasks.drain()
    assert repo.reads == reads + 1, "one read per age limit"
    assert [item.title for item in await notes.outline(S)] == ["Outside"]

    now[0] += OUTLINE_CACHE_SECONDS + 1
    unchanged = await notes.outline_snapshot(S)
    await tasks.drain()
    assert await notes.outline_snapshot(S) is unchanged, "no write: the same object"
    assert repo.reads == reads + 1, "and no read of the pages"


async def test_a_write_during_a_background_read_is_not_undone_by_it(db: Database) -> None:
    from bot.memory.notes import OUTLINE_CACHE_SECONDS

    now = [100.0]
    repo = HeldOutlines(db)
    tasks = BackgroundTasks()
    notes = NotesService(repo, clock=lambda: now[0], tasks=tasks)
    page = await notes.create(S, "First", "body")
    await notes.outline_snapshot(S)
    await NoteRepository(db).update(S, page.id, title="Outside", content=None)
    now[0] += OUTLINE_CACHE_SECONDS + 1
    repo.hold = release = asyncio.Event()
    await notes.outline_snapshot(S)  # starts the read again: it reads "Outside", then waits
    await repo.holding.wait()

    await notes.update(S, page.id, title="Mine")
    assert [item.title for item in await notes.outline(S)] == ["Mine"]
    release.set()
    await tasks.drain()

    assert [item.title for item in await notes.outline(S)] == ["Mine"], "not the older read"


async def test_tools_work_only_inside_a_space(notes: NotesService) -> None:
    registry = ToolRegistry()
    register_notes_tools(registry, notes)
    await notes.create(S, "Mine", "secret of S")
    await notes.create("guild:2", "Theirs", "secret of guild 2")
    read_schema = next(s for s in registry.schemas() if s["function"]["name"] == "read_note")
    assert "space_id" not in read_schema["function"]["parameters"]["properties"]
    forged = await registry.execute(
        "read_note", {"title": "Theirs", "space_id": "guild:2"}, injected=INJECTED
    )
    assert forged.failed and "Existing pages: 'Mine'" in forged.text
    assert "secret" not in forged.text, "the injected space wins over a forged argument"
    outside = await registry.execute("read_note", {"title": "Mine"})
    assert outside.failed and "outside a conversation" in outside.text
