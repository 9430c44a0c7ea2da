"""Spaces through the engine and the loopback LLM: what one space stores never reaches another.

Each test plays two Discord servers (spaces A and B) on one bot and asserts on what the LLM
server received for turns in B: no note, knowledge heading, knowledge file, word or tag of A.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from bot.store.spaces import ALL_SPACES
from bot.tools.web_search import web_search_sources
from bot.turn.events import Event, SessionEvent
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text, ToolCalls

A = "guild:100"
B = "guild:200"
SECRET = "launch on May 5"
HITS = [
    {"title": "Kyoto forecast", "href": "https://weather.example/kyoto", "body": "Sunny, 24°C"},
]


async def turn(services: Services, space: str, text: str, session_id: str | None = None) -> str:
    """Run one turn to its end in `space`; the session id."""
    events: list[Event] = [
        event
        async for event in services.engine.run_turn(TurnRequest(text, session_id, space_id=space))
    ]
    await services.tasks.drain()
    for event in events:
        if isinstance(event, SessionEvent):
            return event.session_id
    assert session_id is not None
    return session_id


def sent(requests: list[RecordedRequest]) -> str:
    """Everything the model received in these requests, as one text."""
    return "\n".join(json.dumps(request.messages, ensure_ascii=False) for request in requests)


@pytest.fixture
async def services(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> AsyncIterator[Services]:
    """Services whose local KB answers any query (so a leaked file would be injected)."""
    async with open_services(make_settings(local_kb_min_score=0.0), service_options) as opened:
        yield opened


async def test_a_note_written_in_a_is_invisible_to_b(
    services: Services, llm: FakeLLMServer
) -> None:
    llm.script(
        ToolCalls([("write_note", {"title": "Secret plan", "content": SECRET, "mode": "create"})]),
        Text("Noted."),
    )
    in_a = await turn(services, A, "note our plan")
    assert [page.title for page in await services.notes.list_pages(A)] == ["Secret plan"]

    before = len(llm.chat_requests)
    llm.script(ToolCalls([("read_note", {"title": "Secret plan"})]), Text("Nothing there."))
    await turn(services, B, "what is the secret plan?")
    in_b = llm.chat_requests[before:]
    assert len(in_b) == 2
    assert "Secret plan" not in sent(in_b[:1]), "B's prompt lists no note of A"
    assert SECRET not in sent(in_b)
    (tool_message,) = [m for m in in_b[1].messages if m["role"] == "tool"]
    assert "No note page titled 'Secret plan'" in tool_message["content"]
    assert "There are no pages yet" in tool_message["content"]
    assert await services.notes.list_pages(B) == []

    # A's session id, presented in B, is not A's conversation.
    before = len(llm.chat_requests)
    events = [
        event async for event in services.engine.run_turn(TurnRequest("continue", in_a, space_id=B))
    ]
    assert [type(event).__name__ for event in events] == ["ErrorEvent"]
    assert len(llm.chat_requests) == before, "no model call"
    assert await services.repos.messages.all_for_session(B, in_a) == []

    llm.script(Text("Yes."))
    await turn(services, A, "remind me", in_a)
    assert "Secret plan" in sent(llm.chat_requests[-1:]), "A still sees its note"


async def test_knowledge_saved_by_a_search_in_a_is_invisible_to_b(
    services: Services, llm: FakeLLMServer, make_settings: SettingsFactory
) -> None:
    async def web_search(query: str) -> list[dict[str, str]]:
        """Search the web.

        Args:
            query: What to search for.
        """
        return HITS

    services.registry.register(web_search, sources=web_search_sources)
    llm.script(
        ToolCalls([("web_search", {"query": "kyoto weather"})]),
        Text("# Kyoto weather\n- sunny all week, 24°C"),
        Text("It is sunny in Kyoto."),
    )
    await turn(services, A, "weather in kyoto?")
    (entry,) = await services.knowledge.list(ALL_SPACES)
    assert entry.space_id == A and entry.md_path is not None
    assert entry.md_path.startswith("web_search/guild_100/")

    before = len(llm.chat_requests)
    llm.script(ToolCalls([("read_knowledge", {"entry_id": entry.id})]), Text("No idea."))
    await turn(services, B, "kyoto weather?")
    in_b = llm.chat_requests[before:]
    assert len(in_b) == 2
    everything = sent(in_b)
    assert "Kyoto weather" not in sent(in_b[:1]), "no heading of A in B's layer 1"
    assert "sunny all week" not in everything, "no body, no KB file of A"
    assert "guild_100" not in everything
    (tool_message,) = [m for m in in_b[1].messages if m["role"] == "tool"]
    assert f"No knowledge entry #{entry.id}" in tool_message["content"]

    llm.script(Text("Still sunny."))
    await turn(services, A, "kyoto weather tomorrow?")
    in_a = sent(llm.chat_requests[-1:])
    assert f"[#{entry.id}] Kyoto weather" in in_a, "A still lists its heading"
    assert "sunny all week" in in_a, "and its KB layer finds its own file"


@dataclass
class Poster:
    """Records openers instead of posting them to Discord."""

    posts: list[tuple[int, str]] = field(default_factory=list)

    async def post_topic(self, channel_id: int, text: str) -> int | None:
        """Remember the opener; a fresh message id."""
        self.posts.append((channel_id, text))
        return 7000 + len(self.posts)


async def test_topic_picking_in_b_never_uses_a_word_said_only_in_a(
    services: Services, llm: FakeLLMServer
) -> None:
    topics = services.topics
    services.topics.register_poster(Poster())
    await topics.configure(10, {"enabled": True}, space=A)
    await topics.configure(20, {"enabled": True}, space=B)
    await topics.configure(30, {"enabled": True}, space=B)
    for text in ("ラーメンが好き", "富士山に登った", "沖縄の海がきれい"):
        await topics.record_activity(A, 10, text)
    await topics.record_activity(B, 20, "カメラを買った")
    # A conversation in a thread of A's channel: its words and tags are A's alone.
    thread = await services.conversations.for_channel(
        A, 11, title="t", guild_id=100, parent_channel_id=10
    )
    llm.script(Text("温泉と紅葉の季節ですね。"))
    await turn(services, A, "京都の温泉と紅葉", thread.id)
    pool_a = {word.word for word in await services.word_pool.words(A, 10)}
    assert {"ラーメン", "富士山", "温泉", "紅葉"} <= pool_a

    before = len(llm.chat_requests)
    llm.default_reply = Text("最近どう？")
    first = await topics.run_now(20)
    again = await topics.run_now(20)
    empty = await topics.run_now(30)
    assert first.posted and first.topic == "カメラ"
    assert not again.posted, "B's only word was used just now, and B has no tags"
    assert not empty.posted and "nothing to talk about" in empty.reason
    in_b = sent(llm.chat_requests[before:])
    assert len(llm.chat_requests) == before + 1
    for word in pool_a:
        assert word not in in_b, word
    result_a = await topics.run_now(10)
    assert result_a.posted and result_a.topic in pool_a
