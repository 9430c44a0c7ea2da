"""ContextBuilder over a real SQLite file: what each part of the prompt gets from the budget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.chat.context import (
    ANSWER_RESERVE_SHARE,
    MEMORY_SHARE,
    BuiltContext,
    ContextBuilder,
    ContextRequest,
    LayerSlot,
)
from bot.chat.tokens import estimate_tokens, message_tokens
from bot.config import Settings
from bot.prompts import prompts_for
from bot.store.db import Database
from bot.store.memories import MemoryRepository
from bot.store.messages import MessageRepository, StoredMessage
from bot.store.sessions import SessionRepository
from tests.conftest import LOCAL


@dataclass
class Store:
    """The repositories the builder reads, on one database."""

    db: Database
    messages: MessageRepository
    memories: MemoryRepository
    session_id: str


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh database with one session."""
    db = await Database.open(tmp_path / "p.db")
    try:
        session = await SessionRepository(db).create(LOCAL, title="t")
        yield Store(db, MessageRepository(db), MemoryRepository(db), session.id)
    finally:
        await db.close()


def settings(window: int) -> Settings:
    """English settings with a `window`-token context."""
    return Settings(_env_file=None, language="en", llm_context_tokens=window)  # type: ignore[call-arg]


@dataclass
class FixedLayer:
    """A layer that answers with a fixed text and remembers the budgets it was given."""

    name: str
    text: str | None
    budgets: list[int] = field(default_factory=list)

    async def render(self, request: ContextRequest, budget_tokens: int) -> str | None:
        """The fixed text, whatever the budget."""
        self.budgets.append(budget_tokens)
        return self.text


async def add(store: Store, role: str, content: str, **extra: Any) -> StoredMessage:
    """Store one message in the session."""
    return await store.messages.add(LOCAL, store.session_id, role, content, **extra)


async def build(
    store: Store, user: StoredMessage, window: int, *layers: LayerSlot, **kwargs: Any
) -> BuiltContext:
    """The context of the turn started by `user`."""
    builder = ContextBuilder(store.messages, store.memories, layers)
    request = ContextRequest(LOCAL, store.session_id, user.content, user.id, settings(window))
    return await builder.build(request, **kwargs)


def budget_of(window: int) -> int:
    """The prompt budget of a window without tools."""
    return window - max(512, int(window * ANSWER_RESERVE_SHARE))


async def test_newest_exchanges_fill_the_budget_and_older_ones_are_counted_as_dropped(
    store: Store,
) -> None:
    for n in range(30):
        await add(store, "user" if n % 2 == 0 else "assistant", f"m{n:02d} " + "word " * 40)
    user = await add(store, "user", "the question", author_name="Ann")
    await add(store, "user", "a later message, queued behind this turn")

    built = await build(store, user, 1024)

    conversation = built.messages[1:]
    assert conversation[-1] == {"role": "user", "content": "[Ann] the question"}
    kept = [m["content"][:3] for m in conversation[:-1]]
    assert kept == [f"m{n:02d}" for n in range(30 - len(kept), 30)], "newest, oldest first"
    assert built.dropped_messages == 30 - len(kept) > 0
    system_tokens = estimate_tokens(built.messages[0]["content"])
    spent = built.layer_tokens["conversation"]
    assert spent == sum(message_tokens(m) for m in conversation)
    assert spent <= budget_of(1024) - system_tokens
    assert spent + message_tokens(conversation[0]) > budget_of(1024) - system_tokens
    assert built.budget == budget_of(1024)


async def test_an_answer_stored_after_this_turn_still_joins_its_question(store: Store) -> None:
    question = await add(store, "user", "first question")
    user = await add(store, "user", "second question")
    await add(store, "assistant", "first answer", reply_to=question.id)

    built = await build(store, user, 4096)

    contents = [m["content"] for m in built.messages[1:]]
    assert contents == ["first question", "first answer", "second question"]


async def test_an_oversized_newest_message_is_cut_not_dropped(store: Store) -> None:
    await add(store, "assistant", "earlier")
    user = await add(store, "user", "long " * 5000)

    built = await build(store, user, 1024, images=["aW1n"])

    (only,) = built.messages[1:]
    assert only["content"].endswith("…") and len(only["content"]) < 25_000
    assert only["images"] == ["aW1n"], "images ride on this turn's user message"
    assert built.dropped_messages == 1


async def test_newest_summaries_that_fit_are_kept_oldest_first(store: Store) -> None:
    summaries = [f"summary {n} " + "x" * 790 for n in range(3)]
    for summary in summaries:
        message = await add(store, "user", "old")
        assert await store.memories.summarize_messages(
            LOCAL, store.session_id, [message.id], summary
        )
    user = await add(store, "user", "now")

    built = await build(store, user, 4096)

    header = prompts_for("en")["memory_header"]
    costs = [estimate_tokens(s) + 2 for s in summaries]
    assert estimate_tokens(header) + sum(costs[1:]) <= int(budget_of(4096) * MEMORY_SHARE)
    assert estimate_tokens(header) + sum(costs) > int(budget_of(4096) * MEMORY_SHARE)
    memory = built.messages[1]
    assert memory == {"role": "system", "content": f"{header}\n{summaries[1]}\n\n{summaries[2]}"}
    assert built.layer_tokens["memory"] == estimate_tokens(header) + sum(costs[1:])
    assert built.messages[2:] == [{"role": "user", "content": "now"}]


async def test_layers_get_their_share_are_cut_to_it_and_empty_ones_add_nothing(
    store: Store,
) -> None:
    long_layer = FixedLayer("long", "fact " * 2000)
    empty_layer = FixedLayer("empty", None)
    user = await add(store, "user", "hello")

    built = await build(store, user, 4096, LayerSlot(long_layer, 0.1), LayerSlot(empty_layer, 0.2))

    share = int(budget_of(4096) * 0.1)
    assert long_layer.budgets == [share] and empty_layer.budgets == [int(budget_of(4096) * 0.2)]
    system, layer, conversation = built.messages
    assert prompts_for("en")["layers_intro"] in system["content"]
    assert layer["role"] == "system" and layer["content"].endswith("…")
    assert built.layer_tokens["long"] == estimate_tokens(layer["content"]) <= share
    assert "empty" not in built.layer_tokens
    assert conversation == {"role": "user", "content": "hello"}
