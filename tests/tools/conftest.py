"""Fixtures the tool tests share: a parser worker, the loopback web server, a loopback-allowing
fetcher and an attachments store with two sessions (module event loop, one worker per module)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

import pytest
import pytest_asyncio

from bot.errors import ToolError
from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.repos.attachments import AttachmentRepository
from bot.tools.isolate import IsolatedRunner
from bot.tools.safe_http import FetchPolicy, SafeFetcher
from tests.fakes.web_server import FakeWebServer

# The space of the sessions s1 and s2.
SPACE = "local:local"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def runner() -> AsyncIterator[IsolatedRunner]:
    """One warm parser worker for the whole module."""
    isolated = IsolatedRunner(timeout=20.0)
    yield isolated
    await isolated.close()


@pytest_asyncio.fixture(loop_scope="module")
async def web() -> AsyncIterator[FakeWebServer]:
    """The loopback web server."""
    async with FakeWebServer() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module")
async def fetcher() -> AsyncIterator[SafeFetcher]:
    """A fetcher whose policy allows the loopback test server (tests only)."""
    async with SafeFetcher(FetchPolicy.allowing("127.0.0.1/32"), timeout=10.0) as safe:
        yield safe


@pytest_asyncio.fixture(loop_scope="module")
async def attachments(suite_database_url: str) -> AsyncIterator[AttachmentRepository]:
    """Attachments over the suite's database (SQLite or PostgreSQL) with sessions s1 and s2
    (in SPACE)."""
    db = await Database.connect(suite_database_url)
    try:
        await db.execute(
            "INSERT INTO spaces (id, kind, created_at) VALUES (?, 'local', ?) "
            "ON CONFLICT (id) DO NOTHING",
            (SPACE, utcnow()),
        )
        for session in ("s1", "s2"):
            await db.execute(
                "INSERT INTO sessions (id, space_id, created_at, updated_at) VALUES (?, ?, ?, ?)",
                (session, SPACE, utcnow(), utcnow()),
            )
        yield AttachmentRepository(db)
    finally:
        await db.close()


async def failure(call: Awaitable[object]) -> str:
    """The text the model receives from a tool call that must fail (raise ToolError)."""
    with pytest.raises(ToolError) as caught:
        await call
    return caught.value.text
