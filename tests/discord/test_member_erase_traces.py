"""/memory me erase through the real discord.py client takes what a member's text left beyond
the messages: the words their channel messages brought to the topic word pool (the next
opener's request holds none of them), the file they attached (the PDF text `pdf_to_text` read
and cached is gone for the next request), and the API log bodies that carried either."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable

import pytest

from bot.memory.member_memory import ERASED_PLACEHOLDER
from bot.services import ServiceOptions
from bot.store.repos.api_logs import ApiLogFilter
from tests.conftest import FAST_RETRY
from tests.discord.conftest import World, WorldFactory
from tests.discord.test_member_memory import _ask, _sent
from tests.fakes.discord_models import FakeUser
from tests.fakes.llm_server import RecordedRequest, Text, ToolCalls
from tests.tools.pdfgen import make_pdf

SECRET = "HERON-42"


@pytest.fixture
def service_options() -> ServiceOptions:
    """The built-in tools too: pdf_to_text reads the member's attachment (and caches it)."""
    return ServiceOptions(retry=FAST_RETRY, builtin_tools=True, warm_start=False, search_fn=_search)


def _search(query: str, count: int) -> list[dict[str, str]]:
    """The web search: one hit naming what was asked."""
    return [{"title": f"On {query}", "href": "https://example.org/a", "body": f"{query}."}]


async def _until(check: Callable[[], Awaitable[bool]]) -> None:
    """Until `check()` holds (the bot handles gateway events on its own tasks)."""
    async with asyncio.timeout(10):
        while not await check():
            await asyncio.sleep(0.02)


async def _erase(w: World, user: FakeUser, channel_id: int) -> str:
    asked = await w.server.inject_interaction(
        "memory me erase", {"confirm": True}, user=user, channel_id=channel_id
    )
    return str((await w.server.wait_for_reply(asked)).content)


async def _pool(w: World) -> set[str]:
    return {word.word for word in await w.services.word_pool.words(w.space, w.server.channel_id)}


async def test_erase_takes_the_words_their_channel_messages_brought(world: WorldFactory) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        enabled = await w.server.inject_interaction("topic enable", user=w.server.admin_user)
        assert "✅" in (await w.server.wait_for_reply(enabled)).content
        await w.server.inject_message("小樽運河の夜景がきれい", author=x, mention_bot=False)
        await _until(lambda: _pool_has_words(w))
        theirs = await _pool(w)
        await w.server.inject_message("京都のお寺で抹茶", author=y, mention_bot=False)
        await _until(lambda: _pool_grew(w, theirs))
        kept = await _pool(w) - theirs
        assert theirs and kept

        assert "Erased" in await _erase(w, x, w.server.channel_id)

        assert await _pool(w) == kept
        w.llm.script(Text("京都の話をしよう！", chunks=1))
        now = await w.server.inject_interaction("topic now", user=w.server.admin_user)
        assert "💬" in (await w.server.wait_for_reply(now)).content
        opener = _sent(w.llm.chat_requests[-1])
        assert not [word for word in theirs if word in opener]
        assert [word for word in kept if word in opener], "the opener drew on the pool"


async def _pool_has_words(w: World) -> bool:
    return bool(await _pool(w))


async def _pool_grew(w: World, before: set[str]) -> bool:
    return bool(await _pool(w) - before)


def _ref(request: RecordedRequest) -> str:
    found = re.search(r"attachment:[0-9a-f]+", _sent(request))
    assert found is not None
    return found.group(0)


def _tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.messages if m["role"] == "tool"]


async def test_erase_takes_their_attachment_its_cached_text_and_the_logged_bodies(
    world: WorldFactory,
) -> None:
    pdf = make_pdf([f"Quarterly report. The code word is {SECRET}.", "Second page."])
    refs: list[str] = []

    def read_it(request: RecordedRequest) -> ToolCalls:
        refs.append(_ref(request))
        return ToolCalls([("pdf_to_text", {"url_or_path": refs[-1]})])

    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        answered = Text("Read it.", chunks=1)
        w.llm.script(read_it, answered)
        sent = await w.server.inject_message(
            "What is the code word?", author=x, attachments=[("r.pdf", pdf, "application/pdf")]
        )
        thread = await w.wait_thread(sent)
        await w.wait_text(thread, answered.text)
        await w.settle()
        assert SECRET in _tool_results(w.llm.chat_requests[-1])[0], "read and cached"

        assert "Erased" in await _erase(w, x, thread)

        stored = await w.services.repos.attachments.list_for_session(
            w.space, str((await w.services.repos.sessions.open_for_channel(w.space, thread)).id)
        )
        assert stored == []
        nothing = Text("It is gone.", chunks=1)
        w.llm.script(ToolCalls([("pdf_to_text", {"url_or_path": refs[0]})]), nothing)
        _, request = await _ask(w, "Read that PDF again", nothing, author=y, thread_id=thread)
        [result] = _tool_results(request)
        assert "Attachment not found" in result
        assert SECRET not in _sent(request)
        logs = await w.services.repos.api_logs.list(ApiLogFilter(space_id=w.space), limit=100)
        bodies = [f"{log.request_json} {log.response_text}" for log in logs]
        assert len(bodies) >= 4
        assert not [body for body in bodies if SECRET in body]


async def test_a_turn_in_flight_during_the_erase_stores_nothing_of_their_text(
    world: WorldFactory,
) -> None:
    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        enabled = await w.server.inject_interaction("topic enable", user=w.server.admin_user)
        assert "✅" in (await w.server.wait_for_reply(enabled)).content
        opened, _ = await _ask(w, "hello there", author=x)
        await w.settle()
        await w.services.tasks.drain()
        pooled = await _pool(w)
        held = asyncio.Event()
        w.llm.script(Text(f"{SECRET} is a lovely name for a heron!", chunks=1, after=held))
        await w.server.inject_message(f"My heron is called {SECRET}", author=x, channel_id=opened)
        await w.llm.wait_for_requests(2)  # the turn is in flight, its message stored

        assert "Erased" in await _erase(w, x, opened)
        held.set()
        await w.wait_text(opened, f"{SECRET} is a lovely name for a heron!")
        await w.settle()
        await w.services.tasks.drain()  # the turn's tags, pool words and summary check

        rows = await w.services.db.fetchall(
            "SELECT m.content, t.tag FROM messages m LEFT JOIN message_tags t "
            "ON t.space_id = m.space_id AND t.message_id = m.id WHERE m.space_id = ?",
            (w.space,),
        )
        assert not [r for r in rows if SECRET.lower() in f"{r['content']} {r['tag']}".lower()]
        assert not [r for r in rows if r["tag"] and r["content"] == ERASED_PLACEHOLDER]
        # X's earlier words left with the erase; the erased turn's never came in.
        assert pooled and await _pool(w) == set()
        # The in-flight call's log row, written after the erase, keeps no body either.
        logs = await w.services.repos.api_logs.list(ApiLogFilter(space_id=w.space), limit=100)
        assert [log for log in logs if log.request_json == ERASED_PLACEHOLDER]
        assert not [log for log in logs if SECRET in f"{log.request_json} {log.response_text}"]
        _, request = await _ask(w, "What was the heron called?", author=y, thread_id=opened)
        assert SECRET not in _sent(request)


async def test_erase_takes_the_web_knowledge_their_searches_saved(world: WorldFactory) -> None:
    def model(request: RecordedRequest) -> ToolCalls | Text:
        asked = str([m for m in request.messages if m["role"] == "user"][-1]["content"])
        if not request.tools:  # the knowledge summary of the search results
            return Text(f"# {asked[:40]}\nWhat the page says.", chunks=1)
        if _tool_results(request):
            return Text("Found it.", chunks=1)
        return ToolCalls([("web_search", {"query": asked.rsplit(": ", maxsplit=1)[-1]})])

    async with world() as w:
        x, y = w.server.user, w.server.add_user("bob")
        w.llm.default_reply = model
        for who, topic in ((x, f"{SECRET} breeders"), (y, "ramen in Sapporo")):
            sent = await w.server.inject_message(f"search the web: {topic}", author=who)
            thread = await w.wait_thread(sent)
            await w.server.wait_for(  # the answer, then its sources
                lambda t=thread: any("Found it." in m.content for m in w.bot_messages(t))
            )
            await w.settle()
        await w.services.tasks.drain()
        saved = await w.services.knowledge.latest(w.space, 10)
        assert sorted(e.query for e in saved) == sorted([f"{SECRET} breeders", "ramen in Sapporo"])
        files = [w.services.knowledge.kb_dir() / str(e.md_path) for e in saved]
        assert all(path.is_file() for path in files)

        assert "Erased" in await _erase(w, x, w.server.channel_id)

        [kept] = await w.services.knowledge.latest(w.space, 10)
        assert kept.query == "ramen in Sapporo"
        assert [path.is_file() for path in files] == [e.id == kept.id for e in saved]
        rows = await w.services.db.fetchall(
            "SELECT query, title, summary FROM knowledge_entries WHERE space_id = ?", (w.space,)
        )
        assert not [row for row in rows if SECRET in " ".join(map(str, row))]
