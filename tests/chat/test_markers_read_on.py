"""Every cut can be read on: at a window too small for the layers, each layer's marker names a
tool call, and that call (through the registry, as the engine runs it) returns the rest."""

from __future__ import annotations

import re
from typing import Any

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from bot.tools.paging import parse_paged_result
from tests.chat.test_context_fit import fill_every_layer, run, systems, write_kb
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, RecordedRequest, Text

CONDENSED = "Ann lives in Kyoto and plans Hokkaido in February by night train."
QUESTION = "tell me the guide0 fact, the guide1 fact and the guide2 fact"
KB_MARKER = re.compile(
    r"### Guide (\d) \(guide\d\.md\)\n(.*?)\n\[… [\d,]+ of [\d,]+ characters of this file shown, "
    r'to fit the context window; read_kb_file\(continue_from="([A-Za-z0-9_-]+)"\) returns the rest',
    re.S,
)
NOTE_MARKER = re.compile(
    r'\[… [\d,]+ of [\d,]+ characters shown; read_note\("(#\d+)", offset=(\d+)\)'
)
NOTE_CHUNK = re.compile(
    r"\n\[characters \d+–(\d+) of (\d+)(?: — call read_note with offset=\d+ for more)?\]$"
)


async def call(services: Services, name: str, arguments: dict[str, Any]) -> str:
    """A tool call as the engine makes it: the space injected, never from the model."""
    result = await services.registry.execute(name, arguments, injected={"space_id": LOCAL})
    assert not result.failed, result.text
    return result.text


async def read_kb_on(services: Services, token: str) -> str:
    """What read_kb_file returns from `token` on, page after page, bodies joined."""
    parts = []
    while token:
        text = await call(services, "read_kb_file", {"continue_from": token})
        body, meta = parse_paged_result(text)
        parts.append(body.split("\n", 1)[1])
        token = meta.get("next_token")
    return "".join(parts)


async def read_note_on(services: Services, page: str, offset: int) -> str:
    """What read_note returns from `offset` on, chunk after chunk."""
    parts = []
    while True:
        text = await call(services, "read_note", {"title": page, "offset": offset})
        body = text.split("\n", 1)[1]
        match = NOTE_CHUNK.search(body)
        if match is None:
            return "".join(parts) + body
        parts.append(body[: match.start()])
        offset = int(match.group(1))
        if offset == int(match.group(2)):
            return "".join(parts)


async def test_every_layer_marker_names_a_call_that_returns_the_rest(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    embed = {"embed_model": "openai/embedder"} if backend == "litellm" else {}
    settings = make_settings(backend, llm_context_tokens=6144, local_kb_min_score=-1.0, **embed)
    write_kb(settings)

    def reply(request: RecordedRequest) -> Text:
        if "condense" in request.messages[0]["content"]:
            return Text(CONDENSED)
        return Text("an answer")

    llm.default_reply = reply  # type: ignore[assignment]
    async with open_services(settings, service_options) as services:
        filled = await fill_every_layer(services)
        await run(services, QUESTION, filled.session_id)
        request = [r for r in llm.chat_requests if QUESTION in str(r.messages)][-1]
        layers = systems(request)
        assert list(layers) == ["knowledge", "notes", "linked_notes", "local_kb", "memory"]

        # Local knowledge base: the marker's token reads each cut file on from its cut.
        cuts = KB_MARKER.findall(layers["local_kb"])
        assert len(cuts) == 3, layers["local_kb"][:300]
        for number, shown, token in cuts:
            whole = filled.kb_files[int(number)]
            assert whole.startswith(shown) and len(shown) < len(whole)
            assert shown + await read_kb_on(services, token) == whole, "the rest, exactly"

        # Linked notes: read_note from the offset the marker gives.
        page, offset = NOTE_MARKER.findall(layers["linked_notes"])[0]
        rest = await read_note_on(services, page, int(offset))
        assert filled.note[: int(offset)] + rest == filled.note

        # Knowledge headings: read_knowledge() lists every heading, the left-out ones too.
        assert "read_knowledge() lists them" in layers["knowledge"]
        listed = await call(services, "read_knowledge", {})
        for n in range(15):
            assert f"] Saved search number {n} about trains (" in listed

        # Note titles: previews cut here (read_note(title) reads a page); with fewer titles
        # shown, read_note with an empty title lists every page.
        assert "[Previews left out to fit the context window: read_note(title)" in layers["notes"]
        page_five = await call(services, "read_note", {"title": "Page 05"})
        assert page_five.endswith("\n" + "Notes about topic 5. " * 5)
        titles = await call(services, "read_note", {"title": ""})
        assert all(f"- Page {n:02d} (#" in titles for n in range(30))
        assert "- Trip plan (#" in titles

        # Summaries: the left-out ones are condensed after the turn; recall finds them.
        assert "recall(query) finds what was said earlier" in layers["memory"]
        assert any(summary not in layers["memory"] for summary in filled.summaries)
        await services.tasks.drain()
        found = await call(services, "recall", {"query": "Hokkaido February"})
        assert CONDENSED in found


async def test_the_member_facts_marker_names_a_call_that_lists_them_all(
    make_settings: SettingsFactory,
    backend: str,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    llm.default_reply = Text("an answer")
    settings = make_settings(backend, llm_context_tokens=4096)
    async with open_services(settings, service_options) as svc:
        facts = [f"Fact {n:02d}: they collect old tickets, maps and stamps." * 4 for n in range(40)]
        for fact in facts:
            await svc.members.remember(LOCAL, "ann", fact, "tool", member_name="Ann")
        request = TurnRequest("what do you know about me?", space_id=LOCAL, author_id="ann")
        [event async for event in svc.engine.run_turn(request)]
        sent = "\n".join(str(m.get("content")) for m in llm.chat_requests[-1].messages)
        assert "more fact(s) left out to fit the context window; member_facts() lists them." in sent
        assert not all(fact in sent for fact in facts), "the layer was cut"
        injected = {"space_id": LOCAL, "member_id": "ann"}
        listed, offset = "", 0
        while True:
            page = await svc.registry.execute("member_facts", {"offset": offset}, injected=injected)
            assert not page.failed
            listed += page.text
            more = re.search(r"call member_facts with offset=(\d+)\]$", page.text)
            if more is None:
                break
            offset = int(more.group(1))
        assert all(f"- {fact}" in listed for fact in facts), "every fact, the left-out ones too"
