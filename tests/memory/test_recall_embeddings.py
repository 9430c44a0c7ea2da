"""Recall with embeddings: messages embedded in the background through the real gateway and the
loopback LLM server, the recall tool's search fusing the space's nearest messages with the
lexical lists, erase taking the vectors, and nothing changed without an embedding model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from bot.chat.engine import TurnRequest
from bot.config import Settings
from bot.llm.gateway import LLMGateway, RetryPolicy
from bot.memory.recall import RecallService
from bot.memory.recall_embed import BATCH, RecallEmbedder, SemanticRecall, _top
from bot.services import ServiceOptions, open_services
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.erase.operations import MemberErasure
from bot.store.repos.message_embeddings import from_blob, to_blob
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, HttpError, Text, hashing_embedder

A = "guild:111"
B = "guild:222"
EMBED = "ollama/embed-model"
FACT = "Our band rehearses every Thursday evening in Kenji's basement"
PARAPHRASE = "When does the group practise music?"
# Words the embedder reads as one meaning, so a paraphrase lands next to its fact.
SAME = {"group": "band", "practise": "rehearses", "music": "band", "when": "thursday"}
EMBED_PATHS = ("/api/embed", "/api/embeddings", "/v1/embeddings")


def meaning_embedder(text: str) -> list[float]:
    """The hashing embedder over words mapped to a shared meaning."""
    words = [SAME.get(word.strip("?.,!").lower(), word.lower()) for word in text.split()]
    return hashing_embedder(" ".join(words))


@dataclass
class World:
    db: Database
    repos: Repositories
    llm: FakeLLMServer
    settings: Settings
    gateway: LLMGateway

    def conf(self) -> Callable[[], Settings]:
        return lambda: self.settings

    def embedder(self, **kwargs: Any) -> RecallEmbedder:
        return RecallEmbedder(self.gateway, self.repos.message_embeddings, self.conf(), **kwargs)

    def recall(self) -> RecallService:
        semantic = SemanticRecall(self.gateway, self.repos.message_embeddings, self.conf())
        return RecallService(self.repos.recall, semantic)

    async def say(self, space: str, text: str, author: str = "u1", title: str = "t") -> int:
        session = await self.repos.sessions.create(space, title=title)
        message = await self.repos.messages.add(
            space, session.id, "user", text, author_id=author, author_name="Alice"
        )
        return message.id

    def embeds(self) -> list[Any]:
        return [r for r in self.llm.requests if r.path in EMBED_PATHS]

    async def rows(self, space: str) -> list[Any]:
        return await self.repos.message_embeddings._db.fetchall(
            "SELECT message_id, model, vector FROM message_embeddings WHERE space_id = ? "
            "ORDER BY message_id",
            (space,),
        )


@pytest.fixture
async def world(llm: FakeLLMServer, make_settings: SettingsFactory) -> AsyncIterator[World]:
    llm.embedder = meaning_embedder
    settings = make_settings(embed_model=EMBED)
    db = await Database.connect(settings.database())
    gateway = LLMGateway(lambda: settings, retry=RetryPolicy(attempts=1))
    try:
        yield World(db, Repositories.over(db), llm, settings, gateway)
    finally:
        await gateway.close()
        await db.close()


async def hit_texts(w: World, space: str, query: str) -> list[str]:
    page = await w.recall().search(space, query, count=10)
    return [hit.content for hit in page.hits]


async def test_a_paraphrase_the_words_miss_is_found_through_the_embeddings(world: World) -> None:
    w = world
    await w.say(A, FACT)
    await w.say(A, "The cafe on the corner sells great croissants")
    lexical = await RecallService(w.repos.recall).search(A, PARAPHRASE, count=10)
    assert lexical.hits == []  # no word in common: the lexical side cannot find it

    assert await w.embedder().backfill() == 2
    [batch] = w.embeds()
    assert batch.model == "embed-model" and len(batch.json["input"]) == 2
    assert (await hit_texts(w, A, PARAPHRASE))[0] == FACT
    assert len(w.embeds()) == 2  # the search embedded its query once


async def test_vectors_never_cross_spaces(world: World) -> None:
    w = world
    fact_b = await w.say(B, FACT)
    await w.say(A, "The cafe on the corner sells great croissants")
    await w.embedder().backfill()
    assert [r["message_id"] for r in await w.rows(B)] == [fact_b]
    semantic = SemanticRecall(w.gateway, w.repos.message_embeddings, w.conf())
    assert fact_b not in await semantic.ranking(A, PARAPHRASE)
    assert await semantic.ranking(B, PARAPHRASE) == [fact_b]
    assert FACT not in await hit_texts(w, A, PARAPHRASE)
    assert (await hit_texts(w, B, PARAPHRASE))[0] == FACT


async def test_erase_removes_the_members_vectors_and_they_are_not_made_again(world: World) -> None:
    w = world
    mine = await w.say(A, FACT, author="u1")
    theirs = await w.say(A, "The band also plays on Sundays", author="u2")
    other_space = await w.say(B, FACT, author="u1")
    await w.embedder().backfill()
    assert {r["message_id"] for r in await w.rows(A)} == {mine, theirs}

    await MemberErasure(w.db).erase(A, "u1", "u1", "[erased]", neutral="Chat")
    assert [r["message_id"] for r in await w.rows(A)] == [theirs]
    assert [r["message_id"] for r in await w.rows(B)] == [other_space]
    assert await w.embedder().backfill() == 0  # hidden now: never embedded again
    assert FACT not in await hit_texts(w, A, PARAPHRASE)


async def test_without_an_embedding_model_nothing_is_embedded_and_recall_is_lexical(
    world: World,
) -> None:
    w = world
    w.settings = w.settings.model_copy(update={"embed_model": None})
    await w.say(A, FACT)
    await w.say(A, "Rehearses are loud")
    assert await w.embedder().backfill() == 0
    assert await hit_texts(w, A, PARAPHRASE) == []
    assert await hit_texts(w, A, "rehearses") == ["Rehearses are loud", FACT]
    assert w.embeds() == [] and await w.rows(A) == []


async def test_a_failed_batch_is_logged_and_retried_later(world: World) -> None:
    w = world
    await w.say(A, FACT)
    w.llm.embed_error = HttpError(500, "embedding server down")
    waiting = w.embedder(retry_seconds=3600.0)
    assert await waiting.backfill() == 0
    assert await waiting.backfill() == 0  # within the retry time: no call at all
    assert len(w.embeds()) == 1 and await w.rows(A) == []
    # The query is embedded only when the space has vectors: lexical recall, no call.
    assert await hit_texts(w, A, PARAPHRASE) == []
    assert len(w.embeds()) == 1

    w.llm.embed_error = None
    retrying = w.embedder(retry_seconds=0.0)
    assert await retrying.backfill() == 1
    assert len(await w.rows(A)) == 1


async def test_batches_of_exactly_batch_then_the_rest(world: World) -> None:
    w = world
    for n in range(BATCH + 1):
        await w.say(A, f"message number {n}")
    assert await w.embedder().backfill() == BATCH + 1
    assert [len(r.json["input"]) for r in w.embeds()] == [BATCH, 1]
    stored = await w.rows(A)
    assert len(stored) == BATCH + 1
    vector = from_blob(stored[0]["vector"])
    assert len(vector) == len(meaning_embedder("x"))
    assert abs(sum(x * x for x in vector) - 1.0) < 1e-5


async def test_a_pass_reads_only_what_came_since_and_skips_unusable_vectors(
    world: World,
) -> None:
    w = world
    w.llm.embedder = lambda text: [0.0] * 8 if "zero" in text else meaning_embedder(text)
    await w.say(A, FACT)
    for n in range(BATCH):  # the newest batch: none gives a usable vector
        await w.say(A, f"zero vector {n}")
    embedder = w.embedder()
    assert await embedder.backfill() == BATCH + 1
    assert [len(r.json["input"]) for r in w.embeds()] == [BATCH, 1]
    assert len(await w.rows(A)) == 1
    assert await embedder.backfill() == 0  # nothing new: no call, the zero ones not retried
    assert len(w.embeds()) == 2
    new = await w.say(A, "The band also plays on Sundays")
    assert await embedder.backfill() == 1
    assert w.embeds()[-1].json["input"] == ["The band also plays on Sundays"]
    assert new in [r["message_id"] for r in await w.rows(A)]


def test_top_k_at_its_limits_and_other_sizes_left_out() -> None:
    query = [1.0, 0.0]
    blobs = [to_blob([1.0, 0.0]), to_blob([0.6, 0.8]), to_blob([0.0, 1.0]), to_blob([1.0])]
    ids = [10, 11, 12, 13]
    assert _top(ids, blobs, query, 3) == [10, 11, 12]
    assert _top(ids, blobs, query, 2) == [10, 11]
    assert _top(ids, blobs, query, 0) == []
    assert _top([13], [to_blob([1.0])], query, 5) == []


async def test_a_turn_makes_no_embedding_call_before_its_answer(
    llm: FakeLLMServer,
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    backend: str,
) -> None:
    llm.embedder = meaning_embedder
    model = EMBED if backend == "ollama" else "openai/embed-model"

    def embeds() -> list[Any]:
        return [r for r in llm.requests if r.path in EMBED_PATHS]

    async with open_services(
        make_settings(backend, embed_model=model), service_options
    ) as services:

        async def turn(text: str) -> None:
            request = TurnRequest(text, None, space_id=LOCAL)
            assert [e async for e in services.engine.run_turn(request)]

        llm.script(Text("Noted!"))
        await turn(FACT)
        await asyncio.wait_for(services.tasks.drain(), 20)
        # After the turn, in the background: its two messages in one batch.
        assert [len(r.json["input"]) for r in embeds()] == [2]

        llm.script(Text("On Thursdays."))
        seen = len(llm.requests)
        await turn("When does Kenji's band rehearse in the basement?")
        asked = llm.requests[seen:]
        chat = next(i for i, r in enumerate(asked) if r.is_chat)
        prompt = "\n".join(m["content"] for m in asked[chat].json["messages"])
        assert FACT in prompt  # the related-memories layer found it, lexically
        assert [r for r in asked[:chat] if r.path in EMBED_PATHS] == []
        await asyncio.wait_for(services.tasks.drain(), 20)
        assert [len(r.json["input"]) for r in embeds()] == [2, 2]
