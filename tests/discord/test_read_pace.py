"""A Discord reply reads the model's stream at a pace once its first text is out.

The real discord.py client against the loopback Discord, the real ollama client against the
loopback LLM; the backend is wrapped to note the pace each delta was read at.
"""

from __future__ import annotations

import pytest

from bot.exts.chat._streaming import READ_PACE, read_pace
from bot.services import ServiceOptions
from tests.conftest import FAST_RETRY
from tests.discord.conftest import WorldFactory
from tests.fakes.llm_server import Text
from tests.fakes.pace_witness import PaceWitnesses


@pytest.fixture
def witnesses() -> PaceWitnesses:
    return PaceWitnesses()


@pytest.fixture
def service_options(witnesses: PaceWitnesses) -> ServiceOptions:
    return ServiceOptions(retry=FAST_RETRY, builtin_tools=False, backend_factory=witnesses)


async def test_a_reply_reads_its_first_text_at_once_then_at_the_pace(
    world: WorldFactory, witnesses: PaceWitnesses
) -> None:
    async with world(stream_edit_interval=1.2) as w:
        w.llm.script(Text("Tea is grown in Uji.", chunks=["Tea ", "is grown ", "in Uji."]))
        question = await w.server.inject_message(f"<@{w.server.bot_user.id}> tea?")
        thread = await w.wait_thread(question)
        await w.wait_text(thread, "Tea is grown in Uji.")
        (witness,) = witnesses.built
        assert witness.text() == "Tea is grown in Uji." and witness.seen[-1][1]
        assert witness.seen[0][0] and witness.paces() == (0.0, {READ_PACE})
        assert witness.at_end == [0.0]


def test_the_pace_is_at_most_a_quarter_of_the_edit_interval() -> None:
    assert read_pace(1.2) == READ_PACE == 0.2
    assert read_pace(0.8) == 0.2
    assert read_pace(0.79) == pytest.approx(0.1975)
    assert read_pace(0.2) == pytest.approx(0.05)  # the lowest interval allowed
