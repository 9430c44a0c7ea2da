"""The related-memories layer: relevant recall hits of the space's other conversations, after
long-term memory, inside the one budget (cut marked with the recall call that shows more)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from bot.chat.budget.tokens import estimate_tokens, message_tokens
from bot.chat.context import ContextBuilder, ContextRequest
from bot.chat.layers import RelatedMemoriesLayer
from bot.config import Settings
from bot.memory.recall import RecallService
from bot.prompts import prompts_for
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.reads.recall_rank import is_relevant, parse_terms, required_matches

S = "guild:111"
OTHER = "guild:222"
FACT = "My cat is called Mochi-Kinako"
QUESTION = "What is the name of my cat?"
BUDGETS = [0, 1, 5, 20, 37, 60, 90, 150, 240, 400, 800]


@dataclass
class World:
    repos: Repositories
    here: str
    there: str

    async def say(self, session: str, text: str, space: str = S, author: str = "Alice") -> int:
        message = await self.repos.messages.add(space, session, "user", text, author_name=author)
        return message.id


@pytest.fixture
async def world(suite_database_url: str) -> AsyncIterator[World]:
    db = await Database.connect(suite_database_url)
    try:
        repos = Repositories.over(db)
        here = (await repos.sessions.create(S, title="Here")).id
        there = (await repos.sessions.create(S, title="Pets")).id
        yield World(repos, here, there)
    finally:
        await db.close()


def settings(window: int = 8192) -> Settings:
    return Settings(_env_file=None, language="en", llm_context_tokens=window)  # type: ignore[call-arg]


async def draft_text(w: World, text: str, window: int = 8192) -> str | None:
    layer = RelatedMemoriesLayer(RecallService(w.repos.recall))
    message_id = await w.say(w.here, text)
    draft = await layer.draft(ContextRequest(S, w.here, text, message_id, settings(window)))
    return None if draft is None else draft.text


async def test_a_fact_of_another_thread_joins_the_context_with_who_when_where(
    world: World,
) -> None:
    await world.say(world.there, FACT)
    await world.say(world.here, "my cat likes boxes")  # this thread's own: never repeated
    text = await draft_text(world, QUESTION)
    assert text is not None
    header, block = text.split("\n\n")
    heading, line = block.split("\n")
    assert header == prompts_for("en")["layer_recall_header"]
    assert heading.startswith("Alice · 20") and heading.endswith(' · in "Pets"')
    assert line == f"> Alice: {FACT}"
    assert "boxes" not in text and QUESTION not in text


async def test_no_layer_when_nothing_is_relevant(world: World) -> None:
    await world.say(world.there, "The weather is nice today")
    await world.say(world.there, FACT, space=S)
    assert await draft_text(world, "Any plans for the volcano trip?") is None
    assert await draft_text(world, "what is that?") is None, "stop words only"
    assert await draft_text(world, "   ") is None


async def test_the_threshold_needs_half_the_terms_and_one_specific_term(world: World) -> None:
    terms = parse_terms("cat volcano dragon pizza")
    assert required_matches(terms) == 2
    assert not is_relevant(("cat",), terms) and is_relevant(("cat", "pizza"), terms)
    many = parse_terms("alpha bravo charlie delta echo foxtrot golf hotel")
    assert required_matches(many) == 3, "at most three, however long the message"
    weak = parse_terms("猫 犬")
    assert not is_relevant(("猫", "犬"), weak), "one-character words alone say too little"
    assert is_relevant(("東京",), parse_terms("東京 猫"))

    await world.say(world.there, "my cat loves the volcano museum")  # 2 of 4 terms
    await world.say(world.there, "pizza night")  # 1 of 4 terms
    text = await draft_text(world, "cat volcano dragon pizza")
    assert text is not None
    assert "> Alice: my cat loves the volcano museum" in text
    assert "> Alice: pizza night" not in text, "shown only as the other hit's neighbour"
    await world.say(world.there, "猫と犬が好き")
    assert await draft_text(world, "猫 犬") is None


async def test_other_spaces_never_join(world: World) -> None:
    other = (await world.repos.sessions.create(OTHER, title="B")).id
    await world.say(other, FACT, space=OTHER)
    assert await draft_text(world, QUESTION) is None


async def test_at_most_three_hits_best_first(world: World) -> None:
    for number in range(5):
        await world.say(world.there, f"cat story number {number}")
    await world.say(world.there, "cat name: Mochi-Kinako")
    text = await draft_text(world, QUESTION)
    assert text is not None
    lines = [line for line in text.splitlines() if line.startswith("> ")]
    assert len(lines) == 3 and lines[0] == "> Alice: cat name: Mochi-Kinako"


async def test_it_follows_long_term_memory_and_shrinks_with_a_marked_cut(world: World) -> None:
    for number in range(3):
        await world.say(world.there, f"{FACT}, story {number}: " + "she sleeps a lot. " * 60)
    old = await world.say(world.here, "old talk")
    await world.repos.memories.summarize_messages(S, world.here, [old], "They talked of tea.")
    layer = RelatedMemoriesLayer(RecallService(world.repos.recall))
    builder = ContextBuilder(world.repos.messages, world.repos.memories, after_memory=[layer])
    user = await world.say(world.here, QUESTION)
    roomy = await builder.build(ContextRequest(S, world.here, QUESTION, user, settings(16384)))
    memory, related = roomy.messages[1]["content"], roomy.messages[2]["content"]
    assert memory.startswith(prompts_for("en")["memory_header"])
    assert related.startswith(prompts_for("en")["layer_recall_header"])
    assert roomy.cut_layers == []

    tight = await builder.build(ContextRequest(S, world.here, QUESTION, user, settings(1400)))
    assert "related" in tight.cut_layers and tight.allocation is not None
    cut = next(m["content"] for m in tight.messages if m["content"].startswith("[Related"))
    assert 'recall(query="name cat") shows more.]' in cut
    assert message_tokens({"role": "system", "content": cut}) <= tight.allocation.layers["related"]
    assert sum(message_tokens(m) for m in tight.messages) <= tight.budget


async def test_every_budget_gives_a_marked_cut_within_it(world: World) -> None:
    await world.say(world.there, f"{FACT}. " + "She likes boxes and naps. " * 40)
    layer = RelatedMemoriesLayer(RecallService(world.repos.recall))
    user = await world.say(world.here, QUESTION)
    draft = await layer.draft(ContextRequest(S, world.here, QUESTION, user, settings()))
    assert draft is not None
    for budget in BUDGETS:
        text = draft.fit(budget)
        if text is not None:
            assert estimate_tokens(text) <= budget
            if text != draft.text:
                assert text.endswith('recall(query="name cat") shows more.]'), budget
