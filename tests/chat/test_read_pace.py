"""A turn paces its model stream's reads once the answer shows, and only when asked to.

The real engine and the real ollama client against the loopback LLM; the backend is wrapped
to note the pace its transport would read at as each delta is passed on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from bot.turn.events import ChunkEvent, DoneEvent, Event
from tests.conftest import FAST_RETRY, LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text, ToolCalls
from tests.fakes.pace_witness import PaceWitness, PaceWitnesses


@dataclass
class Witnessed:
    services: Services
    witnesses: PaceWitnesses

    @property
    def witness(self) -> PaceWitness:
        (only,) = self.witnesses.built
        return only

    async def turn(self, text: str, *, read_pace: float = 0.0) -> list[Event]:
        request = TurnRequest(text, space_id=LOCAL, read_pace=read_pace)
        return [event async for event in self.services.engine.run_turn(request)]


@pytest.fixture
async def witnessed(make_settings: SettingsFactory) -> AsyncIterator[Witnessed]:
    """Services whose chat backend is the real Ollama one, witnessed."""
    witnesses = PaceWitnesses()
    options = ServiceOptions(retry=FAST_RETRY, builtin_tools=False, backend_factory=witnesses)
    async with open_services(make_settings("ollama"), options) as services:
        yield Witnessed(services, witnesses)


async def test_reads_are_paced_from_the_first_text_on_and_not_after_the_final_line(
    witnessed: Witnessed, llm: FakeLLMServer
) -> None:
    llm.script(
        Text("one two three", chunks=["one ", "two ", "three"]),
        Text("four five", chunks=["four ", "five"]),
    )
    events = await witnessed.turn("hi", read_pace=0.2)
    assert isinstance(events[-1], DoneEvent)
    assert "".join(e.text for e in events if isinstance(e, ChunkEvent)) == "one two three"
    # The first text is read at once; the rest (at least the final line) at the turn's pace;
    # the body's end (after the final line) at once again.
    witness = witnessed.witness
    assert witness.text() == "one two three" and witness.seen[-1][1]
    assert witness.seen[0][0] and witness.paces() == (0.0, {0.2})
    assert witness.at_end == [0.0]
    # The next turn starts unpaced again.
    first_of_next = len(witness.seen)
    await witnessed.turn("more", read_pace=0.2)
    assert witness.seen[first_of_next][0].startswith("four")
    assert witness.seen[first_of_next][2] == 0.0


async def test_a_turn_that_asks_no_pace_reads_every_chunk_as_it_comes(
    witnessed: Witnessed, llm: FakeLLMServer
) -> None:
    llm.script(Text("one two three", chunks=["one ", "two ", "three"]))
    await witnessed.turn("hi")
    assert witnessed.witness.text() == "one two three"
    assert witnessed.witness.paces() == (0.0, {0.0})


async def test_after_a_tool_round_the_answer_s_first_text_is_read_at_once(
    witnessed: Witnessed, llm: FakeLLMServer
) -> None:
    async def lookup(city: str) -> str:
        """Look up the weather.

        Args:
            city: City name.
        """
        return f"Sunny in {city}"

    witnessed.services.registry.register(lookup)
    llm.script(
        ToolCalls([("lookup", {"city": "Kyoto"})]),
        Text("It is sunny.", chunks=["It is ", "sunny."]),
    )
    await witnessed.turn("weather?", read_pace=0.2)
    answer = [(text, pace) for text, _, pace in witnessed.witness.seen if text]
    assert "".join(text for text, _ in answer) == "It is sunny."
    assert answer[0][1] == 0.0  # the tool round's own deltas came before, at once
    assert {pace for _, pace in answer[1:]} <= {0.2}
    assert witnessed.witness.seen[-1] == ("", True, 0.2)
