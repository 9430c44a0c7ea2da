"""Long-term memory reads only the newest summaries that could fill the prompt, and counts the
rest: the marker's count stays exact as summaries are added, condensed or kept per session."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.chat.context import SUMMARY_PAGE, ContextBuilder, ContextRequest
from bot.config import Settings
from bot.prompts import prompts_for
from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.repos.memories import MemoryRepository
from bot.store.repos.messages import MessageRepository
from bot.store.repos.sessions import SessionRepository
from tests.conftest import LOCAL

OTHER = "guild:4242"


@pytest.fixture
async def db(suite_database_url: str) -> AsyncIterator[Database]:
    """A fresh database."""
    database = await Database.connect(suite_database_url)
    try:
        yield database
    finally:
        await database.close()


async def fill(db: Database, space: str, session_id: str, count: int, start: int = 0) -> None:
    """`count` live summaries "summary n" (n from `start`), oldest first."""
    now = utcnow()
    await db.executemany(
        "INSERT INTO memories (space_id, session_id, summary, level, created_at) "
        "VALUES (?, ?, ?, 0, ?)",
        [(space, session_id, f"summary {n}", now) for n in range(start, start + count)],
    )


async def memory_text(db: Database, space: str, session_id: str, window: int) -> str:
    """The long-term memory message of a turn in `session_id` with a `window`-token model."""
    messages = MessageRepository(db)
    user = await messages.add(space, session_id, "user", "now")
    builder = ContextBuilder(messages, MemoryRepository(db))
    settings = Settings(_env_file=None, language="en", llm_context_tokens=window)  # type: ignore[call-arg]
    built = await builder.build(ContextRequest(space, session_id, "now", user.id, settings))
    return str(built.messages[1]["content"])


def shown(text: str) -> list[int]:
    """The numbers of the summaries in a memory message, in order."""
    return [int(line.split()[1]) for line in text.split("\n") if line.startswith("summary ")]


async def test_more_summaries_than_a_page_are_counted_exactly_and_the_newest_shown(
    db: Database,
) -> None:
    session = await SessionRepository(db).create(LOCAL, title="t")
    total = SUMMARY_PAGE * 3 + 1
    await fill(db, LOCAL, session.id, total)

    text = await memory_text(db, LOCAL, session.id, 1400)

    numbers = shown(text)
    assert numbers == list(range(total - len(numbers), total)), "the newest, oldest first"
    left = total - len(numbers)
    marker = prompts_for("en").format("layer_memory_left_out", count=left)
    assert marker in text


async def test_a_new_summary_is_shown_and_counted_on_the_next_turn(db: Database) -> None:
    session = await SessionRepository(db).create(LOCAL, title="t")
    await fill(db, LOCAL, session.id, 1000)
    messages = MessageRepository(db)
    builder = ContextBuilder(messages, MemoryRepository(db))
    settings = Settings(_env_file=None, language="en", llm_context_tokens=1400)  # type: ignore[call-arg]
    user = await messages.add(LOCAL, session.id, "user", "now")
    request = ContextRequest(LOCAL, session.id, "now", user.id, settings)
    first = str((await builder.build(request)).messages[1]["content"])
    before = len(shown(first))

    await fill(db, LOCAL, session.id, 1, start=1000)
    second = str((await builder.build(request)).messages[1]["content"])

    assert shown(second)[-1] == 1000, "the new summary is the last one shown"
    assert f"[{1001 - len(shown(second))} older summaries left out" in second
    assert len(shown(second)) == before


async def test_every_summary_that_fits_is_shown_without_a_marker_past_one_page(
    db: Database,
) -> None:
    session = await SessionRepository(db).create(LOCAL, title="t")
    await fill(db, LOCAL, session.id, SUMMARY_PAGE + 1)

    text = await memory_text(db, LOCAL, session.id, 32_768)

    assert shown(text) == list(range(SUMMARY_PAGE + 1))
    assert "left out" not in text


async def test_another_sessions_and_spaces_summaries_are_neither_shown_nor_counted(
    db: Database,
) -> None:
    sessions = SessionRepository(db)
    mine = await sessions.create(LOCAL, title="mine")
    theirs = await sessions.create(LOCAL, title="theirs")
    elsewhere = await sessions.create(OTHER, title="elsewhere")
    await fill(db, LOCAL, mine.id, SUMMARY_PAGE + 50)
    await fill(db, LOCAL, theirs.id, 500, start=10_000)
    await fill(db, OTHER, elsewhere.id, 500, start=20_000)

    text = await memory_text(db, LOCAL, mine.id, 1400)

    numbers = shown(text)
    assert numbers and max(numbers) == SUMMARY_PAGE + 49
    assert f"[{SUMMARY_PAGE + 50 - len(numbers)} older summaries left out" in text
