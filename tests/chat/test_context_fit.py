"""What the model receives, through the engine and the loopback LLM: every layer at the seed's
limits when the window allows it, shrunk and marked when it does not, summaries never dropped."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from bot.chat.budget.allocation import prompt_budget
from bot.chat.budget.tokens import estimate_tokens, message_tokens
from bot.chat.engine import TurnRequest
from bot.prompts import prompts_for
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.knowledge import KnowledgeRepository, KnowledgeSource
from bot.turn.events import Event, SessionEvent
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text

EN = prompts_for("en")
SUMMARY = (
    "- Ann lives in Kyoto and prefers green tea over coffee.\n"
    "- She is planning a trip to Hokkaido in February {n}.\n"
    "- Asked for ryokan recommendations with an onsen.\n"
    "- Budget: about 20,000 yen per night.\n"
    "- Decided against flying; takes the night train.\n"
    "- Open question: which camera lens to bring for snow."
)
KB_FILE_CHARS = 4800
NOTE_CHARS = 7800


async def run(services: Services, text: str, session_id: str | None = None) -> list[Event]:
    """One turn's events."""
    return [
        event
        async for event in services.engine.run_turn(TurnRequest(text, session_id, space_id=LOCAL))
    ]


def session_of(events: list[Event]) -> str:
    """The session the turn ran in."""
    first = events[0]
    assert isinstance(first, SessionEvent)
    return first.session_id


def english_text(chars: int, word: str) -> str:
    """Exactly `chars` characters of numbered sentences about `word`."""
    text = "".join(f"{word} fact {n} is worth keeping. " for n in range(chars // 20 + 1))
    return text[:chars]


def systems(request: RecordedRequest) -> dict[str, str]:
    """The layer messages the model received, by the start of their header."""
    found: dict[str, str] = {}
    starts = {
        "knowledge": "[Accumulated knowledge",
        "notes": "[Shared notes",
        "linked_notes": "[Linked notes",
        "local_kb": "[Local knowledge base",
        "memory": EN["memory_header"],
    }
    for message in request.messages:
        if message["role"] != "system":
            continue
        for name, start in starts.items():
            if message["content"].startswith(start):
                found[name] = message["content"]
    return found


def assert_inside_the_window(services: Services, request: RecordedRequest, window: int) -> None:
    """Messages + the tool schemas sent + the answer's reserve ≤ the window, by the project's
    estimator (a request offered no tools carries no schemas)."""
    schemas = services.registry.schemas() if request.tools else []
    tools = estimate_tokens(json.dumps(schemas, ensure_ascii=False)) if schemas else 0
    sent = sum(message_tokens(message) for message in request.messages)
    assert sent <= prompt_budget(window, tools), (sent, window)


async def add_summaries(services: Services, session_id: str, count: int) -> list[str]:
    """`count` live summaries, each of one archived message."""
    texts = [SUMMARY.format(n=n) for n in range(count)]
    for text in texts:
        message = await services.repos.messages.add(LOCAL, session_id, "user", "archived")
        assert await services.repos.memories.summarize_messages(
            LOCAL, session_id, [message.id], text
        )
    return texts


@dataclass
class Filled:
    """What was put into every layer."""

    session_id: str
    note_id: int
    note: str
    kb_files: list[str]
    summaries: list[str]


async def fill_every_layer(services: Services, language: str = "en") -> Filled:
    """15 knowledge headings, 30 note pages, a linked 7,800-character note, 3 KB files of
    4,800 characters (written before the services opened) and 6 summaries."""
    session_id = session_of(await run(services, "hello"))
    repo = KnowledgeRepository(services.db)
    for n in range(15):
        await repo.add(
            LOCAL,
            query=f"query {n}",
            title=f"Saved search number {n} about trains",
            summary="- body",
            session_id=None,
            md_path=None,
            sources=[KnowledgeSource("src", f"https://src.example/{n}")],
        )
    for n in range(30):
        await services.notes.create(LOCAL, f"Page {n:02d}", f"Notes about topic {n}. " * 5, "Bulk")
    note = english_text(NOTE_CHARS, "note") if language == "en" else "長い日本語のノート。" * 780
    page = await services.notes.create(LOCAL, "Trip plan", note)
    await services.notes.link(LOCAL, session_id, page.id)
    kb_dir = services.settings().kb_dir
    kb_files = [(kb_dir / f"guide{n}.md").read_text("utf-8") for n in range(3)]
    summaries = await add_summaries(services, session_id, 6)
    return Filled(session_id, page.id, note, kb_files, summaries)


def write_kb(settings: Any) -> None:
    """Three 4,800-character guides in the knowledge base."""
    settings.kb_dir.mkdir(parents=True, exist_ok=True)
    for n in range(3):
        head = f"# Guide {n}\n\n"
        body = english_text(KB_FILE_CHARS - len(head), f"guide{n}")
        (settings.kb_dir / f"guide{n}.md").write_text(head + body, "utf-8")


@pytest.mark.parametrize("window", [8192, 16384])
async def test_six_live_summaries_all_reach_the_model(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
    window: int,
) -> None:
    llm.default_reply = Text("an answer")
    async with open_services(make_settings(llm_context_tokens=window), service_options) as svc:
        session_id = session_of(await run(svc, "hello"))
        summaries = await add_summaries(svc, session_id, 6)
        await run(svc, "what do you remember?", session_id)
        await svc.tasks.drain()
        memory = systems(llm.chat_requests[-1])["memory"]
        assert memory == EN["memory_header"] + "\n" + "\n\n".join(summaries), "all six, whole"
        assert len(await svc.repos.memories.live(LOCAL, session_id)) == 6, "nothing to condense"


async def test_summaries_that_overflow_their_layer_are_condensed_after_the_turn(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    def reply(request: RecordedRequest) -> Text:
        if "condense" in request.messages[0]["content"]:
            return Text("CONDENSED: Ann, Kyoto, green tea, Hokkaido by night train.")
        return Text("an answer")

    llm.default_reply = reply  # type: ignore[assignment]
    settings = make_settings(llm_context_tokens=2048)
    async with open_services(settings, service_options) as services:
        session_id = session_of(await run(services, "hello"))
        summaries = await add_summaries(services, session_id, 6)
        await run(services, "what do you remember?", session_id)
        await services.tasks.drain()

        turn, condense, *rest = llm.chat_requests[1:]
        assert rest == []
        memory = systems(turn)["memory"]
        shown = [s for s in summaries if s in memory]
        assert 0 < len(shown) < 6 and shown == summaries[-len(shown) :], "the newest"
        left = 6 - len(shown)
        marker = (
            f"[{left} older summaries are being condensed; they are not shown this time: "
            "recall(query) finds what was said earlier.]"
        )
        assert memory.splitlines()[1] == marker, "never a silent gap"
        assert_inside_the_window(services, turn, 2048)
        condensing = json.dumps(condense.messages, ensure_ascii=False)
        assert all(json.dumps(s, ensure_ascii=False)[1:-1] in condensing for s in summaries)

        live = await services.repos.memories.live(LOCAL, session_id)
        assert [m.summary[:10] for m in live] == ["CONDENSED:"] and live[0].level == 1
        every = await services.repos.memories.all_for_session(LOCAL, session_id)
        assert [m.summary for m in every if m.condensed_into == live[0].id] == summaries, "kept"

        await run(services, "and now?", session_id)
        memory = systems(llm.chat_requests[-1])["memory"]
        assert memory == EN["memory_header"] + "\n" + live[0].summary
        assert len(llm.chat_requests) == 4, "condensed once, not again"


async def test_at_16384_every_layer_arrives_at_the_seeds_limits(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    llm.default_reply = Text("an answer")
    settings = make_settings(llm_context_tokens=16384, local_kb_min_score=-1.0)
    write_kb(settings)
    async with open_services(settings, service_options) as services:
        filled = await fill_every_layer(services)
        await run(services, "tell me about the guides and my trip", filled.session_id)
        request = llm.chat_requests[-1]
        layers = systems(request)

        assert list(layers) == ["knowledge", "notes", "linked_notes", "local_kb", "memory"]
        assert layers["knowledge"].count("\n- [#") == 15
        assert layers["notes"].count(": Notes about topic") == 30, "every title with its preview"
        assert f"### Trip plan\n{filled.note}" in layers["linked_notes"]
        assert len(filled.note) == 7800, "the linked note arrives whole"
        for text in filled.kb_files:
            assert len(text) == KB_FILE_CHARS and text in layers["local_kb"], "KB files whole"
        assert all(summary in layers["memory"] for summary in filled.summaries)
        for text in layers.values():
            assert "to fit the context window" not in text and "characters shown" not in text
        assert_inside_the_window(services, request, 16384)


async def test_a_japanese_linked_note_of_7800_characters_arrives_whole_at_16384(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    llm.default_reply = Text("an answer")
    settings = make_settings(llm_context_tokens=16384)
    async with open_services(settings, service_options) as services:
        session_id = session_of(await run(services, "こんにちは"))
        note = "長い日本語のノート。" * 780
        page = await services.notes.create(LOCAL, "旅行計画", note)
        await services.notes.link(LOCAL, session_id, page.id)
        await run(services, "計画は?", session_id)
        linked = systems(llm.chat_requests[-1])["linked_notes"]
        assert len(note) == 7800 and f"### 旅行計画\n{note}" in linked
        assert_inside_the_window(services, llm.chat_requests[-1], 16384)


async def test_at_a_small_window_every_layer_shrinks_and_says_so(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    llm.default_reply = Text("an answer")
    settings = make_settings(llm_context_tokens=6144, local_kb_min_score=-1.0)
    write_kb(settings)
    async with open_services(settings, service_options) as services:
        filled = await fill_every_layer(services)
        await run(services, "tell me about the guides and my trip", filled.session_id)
        request = llm.chat_requests[-1]
        layers = systems(request)

        assert list(layers) == ["knowledge", "notes", "linked_notes", "local_kb", "memory"]
        assert (
            "older heading(s) left out to fit the context window; read_knowledge() lists them."
            in layers["knowledge"]
        )
        assert "left out to fit the context window" in layers["notes"]
        linked = layers["linked_notes"]
        shown = linked.split("### Trip plan\n", 1)[1].split("\n[…", 1)[0]
        assert 0 < len(shown) < 7800 and filled.note.startswith(shown)
        assert (
            f'[… {len(shown):,} of 7,800 characters shown; read_note("#{filled.note_id}", '
            f"offset={len(shown)}) returns the rest.]" in linked
        ), "the marker says where read_note continues"
        assert layers["local_kb"].count("characters of this file shown") == 3
        assert "older summaries are being condensed" in layers["memory"]
        assert request.messages[-1] == {
            "role": "user",
            "content": "tell me about the guides and my trip",
        }
        assert_inside_the_window(services, request, 6144)
    # Closing waits for background work: the summaries were condensed before the gateway closed.
    async with open_services(settings, service_options) as reopened:
        live = await reopened.repos.memories.live(LOCAL, filled.session_id)
        assert [m.level for m in live] == [1]
