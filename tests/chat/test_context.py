"""ContextBuilder over a real SQLite file: what each part of the prompt gets from the budget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.chat.budget.allocation import prompt_budget
from bot.chat.budget.tokens import estimate_tokens, message_tokens, truncate_to_tokens
from bot.chat.context import (
    BuiltContext,
    ContextBuilder,
    ContextLayer,
    ContextRequest,
    Draft,
    MemoryCutListener,
    fit_summaries,
)
from bot.config import Settings
from bot.prompts import prompts_for
from bot.store.engine.database import Database
from bot.store.repos.memories import MemoryRepository
from bot.store.repos.messages import MessageRepository, StoredMessage
from bot.store.repos.sessions import SessionRepository
from tests.conftest import LOCAL


@dataclass
class Store:
    """The repositories the builder reads, on one database."""

    db: Database
    messages: MessageRepository
    memories: MemoryRepository
    session_id: str


@pytest.fixture
async def store(suite_database_url: str) -> AsyncIterator[Store]:
    """A fresh database with one session."""
    db = await Database.connect(suite_database_url)
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
    """A layer whose full text is fixed; cut, it keeps a prefix and says so."""

    name: str
    text: str | None
    cuts: list[int] = field(default_factory=list)

    async def draft(self, request: ContextRequest) -> Draft | None:
        """The fixed text; shortened, a prefix and a marker."""
        if self.text is None:
            return None
        text = self.text

        def shorten(budget: int) -> str | None:
            self.cuts.append(budget)
            return truncate_to_tokens(text, budget - 5) + " [cut]"

        return Draft(text, shorten)


class BrokenLayer:
    """A layer whose storage fails."""

    name = "broken"

    async def draft(self, request: ContextRequest) -> Draft | None:
        """Always fails."""
        raise RuntimeError("disk on fire")


async def add(store: Store, role: str, content: str, **extra: Any) -> StoredMessage:
    """Store one message in the session."""
    return await store.messages.add(LOCAL, store.session_id, role, content, **extra)


async def summarise(store: Store, *summaries: str) -> None:
    """Store each text as a summary of one (archived) message."""
    for summary in summaries:
        message = await add(store, "user", "old")
        assert await store.memories.summarize_messages(
            LOCAL, store.session_id, [message.id], summary
        )


async def build(
    store: Store,
    user: StoredMessage,
    window: int,
    *layers: ContextLayer,
    on_memory_cut: MemoryCutListener | None = None,
    factor: float = 1.0,
    **kwargs: Any,
) -> BuiltContext:
    """The context of the turn started by `user`."""
    builder = ContextBuilder(store.messages, store.memories, layers, on_memory_cut=on_memory_cut)
    request = ContextRequest(
        LOCAL, store.session_id, user.content, user.id, settings(window), factor
    )
    return await builder.build(request, **kwargs)


def system_cost(built: BuiltContext) -> int:
    """Tokens of the system prompt message."""
    return message_tokens(built.messages[0])


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
    spent = built.layer_tokens["conversation"]
    assert spent == sum(message_tokens(m) for m in conversation)
    assert spent <= built.budget - system_cost(built)
    assert spent + message_tokens(conversation[0]) > built.budget - system_cost(built)
    assert built.budget == prompt_budget(1024, 0) == 1024 - 512


async def test_an_answer_stored_after_this_turn_still_joins_its_question(store: Store) -> None:
    question = await add(store, "user", "first question")
    user = await add(store, "user", "second question")
    await add(store, "assistant", "first answer", reply_to=question.id)

    built = await build(store, user, 4096)

    contents = [m["content"] for m in built.messages[1:]]
    assert contents == ["first question", "first answer", "second question"]


async def test_a_turn_queued_behind_a_long_burst_ends_with_its_own_message(store: Store) -> None:
    questions = [await add(store, "user", f"q{n:03d}") for n in range(120)]
    for question in questions[:110]:
        await add(store, "assistant", f"a{question.content}", reply_to=question.id)
    mine = questions[110]  # 110 answers, all stored after it, are newer by id

    built = await build(store, mine, 32768)

    conversation = built.messages[1:]
    assert conversation[-1] == {"role": "user", "content": "q110"}
    assert conversation[-3:-1] == [
        {"role": "user", "content": "q109"},
        {"role": "assistant", "content": "aq109"},
    ]
    assert not any(m["content"] in ("q111", "q119") for m in conversation), "later turns"


async def test_a_turns_message_no_longer_live_is_still_what_the_model_answers(
    store: Store,
) -> None:
    await add(store, "user", "earlier")
    mine = await add(store, "user", "my question", author_name="Ann")
    assert await store.memories.summarize_messages(LOCAL, store.session_id, [mine.id], "gone")
    builder = ContextBuilder(store.messages, store.memories)
    request = ContextRequest(
        LOCAL, store.session_id, mine.content, mine.id, settings(4096), author_name="Ann"
    )

    built = await builder.build(request)

    assert built.messages[-1] == {"role": "user", "content": "[Ann] my question"}
    assert [m["content"] for m in built.messages[1:-1] if m["role"] == "user"] == ["earlier"]


async def test_an_oversized_newest_message_is_cut_not_dropped(store: Store) -> None:
    await add(store, "assistant", "earlier")
    user = await add(store, "user", "long " * 5000)

    built = await build(store, user, 1024, images=["aW1n"])

    (only,) = built.messages[1:]
    assert only["content"].endswith("…") and len(only["content"]) < 25_000
    assert only["images"] == ["aW1n"], "images ride on this turn's user message"
    assert built.dropped_messages == 1
    assert sum(message_tokens(m) for m in built.messages) <= built.budget


async def test_the_budget_is_the_window_less_reserve_and_tools_divided_by_the_factor(
    store: Store,
) -> None:
    user = await add(store, "user", "hi")
    tools: list[dict[str, Any]] = [
        {"type": "function", "function": {"name": "t", "description": "d " * 400}}
    ]
    plain = await build(store, user, 16384, tools=tools)
    learned = await build(store, user, 16384, factor=1.25, tools=tools)
    tool_tokens = plain.tokens - sum(message_tokens(m) for m in plain.messages)
    assert tool_tokens > 0
    assert plain.budget == 16384 - 3276 - tool_tokens
    assert learned.budget == int((16384 - 3276 - tool_tokens * 1.25) / 1.25)


async def test_all_summaries_are_shown_when_they_fit(store: Store) -> None:
    summaries = [f"summary {n}: " + "likes tea and trains. " * 20 for n in range(6)]
    await summarise(store, *summaries)
    user = await add(store, "user", "now")
    cuts: list[tuple[str, int]] = []

    built = await build(store, user, 8192, on_memory_cut=lambda s, n: cuts.append((s, n)))

    header = prompts_for("en")["memory_header"]
    memory = built.messages[1]
    assert memory == {"role": "system", "content": header + "\n" + "\n\n".join(summaries)}
    assert built.layer_tokens["memory"] == message_tokens(memory)
    assert built.messages[2:] == [{"role": "user", "content": "now"}]
    assert cuts == [] and built.cut_layers == []


async def test_summaries_that_do_not_fit_show_the_newest_and_a_marker_never_a_gap(
    store: Store,
) -> None:
    summaries = [f"summary {n} " + "x" * 790 for n in range(6)]
    await summarise(store, *summaries)
    user = await add(store, "user", "now")
    cuts: list[tuple[str, int]] = []

    built = await build(store, user, 1400, on_memory_cut=lambda s, n: cuts.append((s, n)))

    assert built.cut_layers == ["memory"]
    text = built.messages[1]["content"]
    header, marker, *rest = text.split("\n")
    assert header == prompts_for("en")["memory_header"]
    body = "\n".join(rest)
    shown = [s for s in summaries if s in body]
    assert shown and shown == summaries[-len(shown) :], "the newest, oldest first"
    left = 6 - len(shown)
    assert marker == (
        f"[{left} older summaries are being condensed; they are not shown this time: "
        "recall(query) finds what was said earlier.]"
    )
    assert built.allocation is not None
    allotted = built.allocation.layers["memory"] - 4
    assert cuts == [(store.session_id, allotted)]
    assert estimate_tokens(text) <= allotted
    assert estimate_tokens(text) + estimate_tokens(summaries[0]) + 2 > allotted, "as many as fit"

    unwired = await build(store, user, 1400)
    assert (
        f"[{left} older summaries left out to fit the context window: recall(query) finds"
        in unwired.messages[1]["content"]
    ), "without a summariser nothing claims to be condensing"


def test_a_summary_too_long_for_the_layer_is_cut_and_marked() -> None:
    def marker(n: int) -> str:
        return f"[{n} older]"

    text = fit_summaries("H", ["old one", "new " * 200], 60, marker, "\n[cut]")
    assert text is not None
    assert text.startswith("H\n[1 older]\nnew new") and text.endswith("…\n[cut]")
    assert estimate_tokens(text) <= 60
    assert fit_summaries("H", ["old", "new " * 200], 8, marker, "[cut]") == "H\n[2 older]"
    assert fit_summaries("H", ["old", "new"], 2, marker, "[cut]") is None
    assert fit_summaries("H", [], 100, marker, "[cut]") is None


async def test_layers_get_their_demand_when_it_fits(store: Store) -> None:
    short = FixedLayer("short", "fact " * 100)
    empty = FixedLayer("empty", None)
    user = await add(store, "user", "hello")

    built = await build(store, user, 4096, short, empty)

    system, layer, conversation = built.messages
    assert prompts_for("en")["layers_intro"] in system["content"]
    assert layer == {"role": "system", "content": "fact " * 100}
    assert short.cuts == []
    assert built.layer_tokens["short"] == message_tokens(layer)
    assert "empty" not in built.layer_tokens and built.cut_layers == []
    assert conversation == {"role": "user", "content": "hello"}


async def test_layers_too_big_for_the_window_shrink_in_proportion_and_are_marked(
    store: Store,
) -> None:
    small = FixedLayer("small", "a " * 2000)  # 1,000 tokens
    large = FixedLayer("large", "b " * 6000)  # 3,000 tokens
    user = await add(store, "user", "hello")

    built = await build(store, user, 4096, small, large)

    plan = built.allocation
    assert plan is not None and plan.shrunk
    room = built.budget - system_cost(built) - message_tokens(built.messages[-1])
    assert plan.layers == {
        "small": 1004 * room // 4008,
        "large": 3004 * room // 4008,
    }
    assert small.cuts == [plan.layers["small"] - 4] and large.cuts == [plan.layers["large"] - 4]
    texts = [m["content"] for m in built.messages[1:3]]
    assert all(text.endswith(" [cut]") for text in texts)
    assert built.cut_layers == ["small", "large"]
    assert sum(message_tokens(m) for m in built.messages) <= built.budget


async def test_the_last_exchanges_stay_whole_however_big_the_layers(store: Store) -> None:
    for n in range(12):
        await add(store, "user" if n % 2 == 0 else "assistant", f"m{n:02d} " + "talk " * 60)
    user = await add(store, "user", "and now?")
    huge = FixedLayer("kb", "fact " * 20_000)

    built = await build(store, user, 8192, huge)

    talk = [m["content"][:3] for m in built.messages[2:]]
    assert talk[-5:] == ["m08", "m09", "m10", "m11", "and"], "three exchanges, whole"
    assert built.allocation is not None and built.allocation.recent_exchanges == 3
    assert all(not m["content"].endswith("…") for m in built.messages[2:])


async def test_a_failing_layer_adds_nothing_and_the_turn_goes_on(store: Store) -> None:
    user = await add(store, "user", "hello")
    built = await build(store, user, 4096, BrokenLayer(), FixedLayer("ok", "fine"))
    assert [m["content"] for m in built.messages[1:]] == ["fine", "hello"]
