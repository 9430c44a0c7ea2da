"""Context assembly: the system prompt, the memory layers and the conversation, in one budget.

Every layer first drafts its text at the seed's limits (its demand); `allocate` decides how
many tokens each part gets (bot/chat/budget/allocation.py); then each layer is cut to its allotment,
with a marker telling the model what was left out and how to get it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Protocol

from bot.chat.budget.allocation import Allocation, allocate, prompt_budget
from bot.chat.budget.tokens import (
    MESSAGE_OVERHEAD,
    estimate_tokens,
    message_tokens,
    truncate_to_tokens,
)
from bot.config import Settings
from bot.llm.types import Message, ToolSchema
from bot.prompts import Prompts, prompts_for
from bot.store.repos.memories import Memory, MemoryRepository
from bot.store.repos.messages import FAILED_TURN_ROLE, MessageRepository, StoredMessage

log = logging.getLogger(__name__)

RECENT_MESSAGE_LIMIT = 100
MEMORY_LAYER = "memory"
# Below this many tokens a cut summary says too little to be worth its marker.
MIN_CUT_SUMMARY_TOKENS = 16
# Live summaries are read this many at a time, newest first, until they could fill the prompt.
SUMMARY_PAGE = 200
# A session's count of live summaries (for the marker) is read again after this long even when
# no newer summary appeared, so one deleted meanwhile is not miscounted for long.
COUNT_CACHE_SECONDS = 30.0

# Called with (session_id, tokens the memory layer may use) when its summaries did not all fit.
MemoryCutListener = Callable[[str, int], None]


@dataclass(frozen=True)
class ContextRequest:
    """What a layer may look at to decide what to contribute (all of one space)."""

    space_id: str
    session_id: str
    user_text: str
    user_message_id: int
    settings: Settings
    # Real tokens per estimated token for this turn's model (see LLMGateway.token_factor).
    token_factor: float = 1.0
    # The member speaking (Discord user id, or the local user); None when nobody is known.
    member_id: str | None = None
    # The session's Discord channel (its thread), when it is on Discord.
    channel_id: int | None = None
    # The speaking member's display name, as this turn's message was stored with it.
    author_name: str | None = None
    # Lines for this turn's system prompt only (what member memory did or cannot do).
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Draft:
    """A layer's text at the seed's limits, and the layer's own way of cutting it shorter.

    `shorten(budget)` returns a text of at most `budget` tokens that carries a marker saying
    what was left out, or None when nothing useful fits.
    """

    text: str
    shorten: Callable[[int], str | None]

    @cached_property
    def demand(self) -> int:
        """Tokens of the full text."""
        return estimate_tokens(self.text)

    def fit(self, budget_tokens: int) -> str | None:
        """The full text when it fits, else the layer's marked cut; never over the budget."""
        if self.demand <= budget_tokens:
            return self.text
        if budget_tokens <= 0:
            return None
        text = self.shorten(budget_tokens)
        if text is not None and estimate_tokens(text) > budget_tokens:
            # Token estimates of parts may round below the estimate of their joined text.
            text = truncate_to_tokens(text, budget_tokens - 1)
        return text or None


class ContextLayer(Protocol):
    """A memory layer that contributes one system message (or nothing)."""

    name: str

    async def draft(self, request: ContextRequest) -> Draft | None:
        """The layer's text at the seed's limits, or None when it has nothing."""
        ...


@dataclass
class BuiltContext:
    """Messages for the model and how the budget was spent."""

    messages: list[Message]
    tokens: int
    budget: int
    layer_tokens: dict[str, int] = field(default_factory=dict)
    dropped_messages: int = 0
    allocation: Allocation | None = None
    cut_layers: list[str] = field(default_factory=list)
    # Estimated tokens of the tool schemas the budget left room for (0: none offered).
    tool_tokens: int = 0
    # The context again with that many tokens kept free for the turn's tool results: the
    # layers and the older conversation give way to what the turn has read.
    refit: Callable[[int], list[Message]] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class _Parts:
    """What a turn's context is rendered from, read once per turn."""

    request: ContextRequest
    system: Message
    present: list[tuple[str, Draft]]
    conversation: list[Message]
    budget: int
    tool_tokens: int
    images: tuple[str, ...]


def _speaker_content(message: StoredMessage) -> str:
    if message.role == "user" and message.author_name:
        return f"[{message.author_name}] {message.content}"
    return message.content


def fit_summaries(
    header: str,
    summaries: Sequence[str],
    budget: int,
    marker: Callable[[int], str],
    cut: str,
    *,
    older: int = 0,
) -> str | None:
    """Header, a marker for the older summaries left out, and the newest that fit (oldest first).

    `older` counts summaries older than `summaries` that were not even read. When not even the
    newest fits, it is cut and ends with `cut`.
    """
    if not summaries:
        return None
    spent = estimate_tokens(header) + 1 + estimate_tokens(marker(older + len(summaries))) + 1
    kept: list[str] = []
    for summary in reversed(summaries):
        cost = estimate_tokens(summary) + 2
        if spent + cost > budget:
            break
        kept.append(summary)
        spent += cost
    if not kept:
        room = budget - spent - estimate_tokens(cut) - 2
        if room >= MIN_CUT_SUMMARY_TOKENS:
            kept.append(truncate_to_tokens(summaries[-1], room - 1) + cut)
        elif spent > budget:
            return None
    left = older + len(summaries) - len(kept)
    lines = [header]
    if left:
        lines.append(marker(left))
    body = "\n\n".join(reversed(kept))
    return "\n".join(lines) + (f"\n{body}" if body else "")


class SummariesLayer:
    """Layer 4: every live summary of the conversation (seed 002: all of them).

    When they do not all fit, the newest that fit are shown under a one-line marker counting
    the older ones; the builder then asks for them to be condensed. Only the newest summaries
    that could fill the whole prompt are read (newest first, SUMMARY_PAGE at a time): a
    session's older ones could never be shown, so they are only counted — and that count is
    kept until a newer summary appears (or COUNT_CACHE_SECONDS pass), not read every turn.
    """

    name = MEMORY_LAYER

    def __init__(
        self,
        memories: MemoryRepository,
        *,
        condensing: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._memories = memories
        self._condensing = condensing
        self._clock = clock
        # (space, session) → (newest live summary id, when counted, live summaries then).
        self._counts: dict[tuple[str, str], tuple[int, float, int]] = {}

    async def draft(self, request: ContextRequest) -> Draft | None:
        """The newest live summaries that could fill the prompt, oldest first."""
        window = prompt_budget(request.settings.llm_context_tokens, 0, request.token_factor) + 1
        live, older = await self._window(request.space_id, request.session_id, window)
        if not live:
            return None
        prompts = prompts_for(request.settings.language)
        header = prompts["memory_header"]
        summaries = [memory.summary for memory in live]
        marker_key = "layer_memory_condensing" if self._condensing else "layer_memory_left_out"

        def marker(count: int) -> str:
            return prompts.format(marker_key, count=count)

        def shorten(budget: int) -> str | None:
            return fit_summaries(
                header, summaries, budget, marker, prompts["layer_memory_cut"], older=older
            )

        lines = [header, marker(older)] if older else [header]
        return Draft("\n".join(lines) + "\n" + "\n\n".join(summaries), shorten)

    async def _window(self, space: str, session_id: str, tokens: int) -> tuple[list[Memory], int]:
        """The newest live summaries worth `tokens` (oldest first) and how many are older."""
        newest_first: list[Memory] = []
        spent = 0
        before: int | None = None
        while spent < tokens:
            page = await self._memories.live_page(space, session_id, SUMMARY_PAGE, before)
            for memory in page:
                newest_first.append(memory)
                spent += estimate_tokens(memory.summary) + 2
                if spent >= tokens:
                    break
            if spent < tokens and len(page) < SUMMARY_PAGE:
                return newest_first[::-1], 0  # every live summary was read
            before = page[-1].id
        older = await self._count(space, session_id, newest_first[0].id) - len(newest_first)
        return newest_first[::-1], max(0, older)

    async def _count(self, space: str, session_id: str, newest: int) -> int:
        key = (space, session_id)
        now = self._clock()
        cached = self._counts.get(key)
        if cached is not None and cached[0] == newest and now - cached[1] < COUNT_CACHE_SECONDS:
            return cached[2]
        count = await self._memories.count_live(space, session_id)
        self._counts[key] = (newest, now, count)
        return count


class ContextBuilder:
    """Builds one turn's messages (system, memory layers, summaries, conversation) in a budget.

    `layers` come before long-term memory (the summaries), `after_memory` after it.
    """

    def __init__(
        self,
        messages: MessageRepository,
        memories: MemoryRepository,
        layers: Sequence[ContextLayer] = (),
        *,
        on_memory_cut: MemoryCutListener | None = None,
        after_memory: Sequence[ContextLayer] = (),
    ) -> None:
        self._messages = messages
        self._layers: list[ContextLayer] = [
            *layers,
            SummariesLayer(memories, condensing=on_memory_cut is not None),
            *after_memory,
        ]
        self._on_memory_cut = on_memory_cut

    @property
    def layers(self) -> tuple[ContextLayer, ...]:
        """Every layer, in prompt order (long-term memory included)."""
        return tuple(self._layers)

    async def build(
        self,
        request: ContextRequest,
        *,
        tools: Sequence[ToolSchema] = (),
        images: Sequence[str] = (),
    ) -> BuiltContext:
        """The messages to send: system, layers, long-term memory, recent conversation."""
        settings = request.settings
        tool_tokens = estimate_tokens(json.dumps(list(tools), ensure_ascii=False)) if tools else 0
        budget = prompt_budget(settings.llm_context_tokens, tool_tokens, request.token_factor)
        system: Message = {
            "role": "system",
            "content": self._system_text(
                settings, prompts_for(settings.language), has_tools=bool(tools), notes=request.notes
            ),
        }
        drafts, recent = await asyncio.gather(
            self._draft_layers(request),
            self._messages.recent_live(
                request.space_id,
                request.session_id,
                RECENT_MESSAGE_LIMIT,
                up_to=request.user_message_id,
            ),
        )
        parts = _Parts(
            request,
            system,
            [(layer.name, draft) for layer, draft in drafts if draft is not None],
            _conversation(recent, request),
            budget,
            tool_tokens,
            tuple(images),
        )
        return self._render(parts, 0, notify=True)

    def _render(self, parts: _Parts, reading: int, *, notify: bool) -> BuiltContext:
        """The context of `parts` with `reading` tokens kept free for this turn's tool results;
        `notify` tells the memory-cut listener (only the turn's first form does)."""
        request = parts.request
        plan = allocate(
            parts.budget,
            message_tokens(parts.system),
            _exchange_costs(parts.conversation),
            {name: draft.demand + MESSAGE_OVERHEAD for name, draft in parts.present},
            tools=bool(parts.tool_tokens),
            reading=reading,
        )
        messages: list[Message] = [parts.system]
        used: dict[str, int] = {}
        cut: list[str] = []
        for name, draft in parts.present:
            allotted = plan.layers[name] - MESSAGE_OVERHEAD
            text = draft.fit(allotted)
            if text != draft.text:
                cut.append(name)
                if notify and name == MEMORY_LAYER and self._on_memory_cut is not None:
                    self._on_memory_cut(request.session_id, max(0, allotted))
            if text is None:
                continue
            message: Message = {"role": "system", "content": text}
            messages.append(message)
            used[name] = message_tokens(message)

        remaining = parts.budget - plan.tool_reserve - sum(message_tokens(m) for m in messages)
        chosen, dropped = _fit_conversation(parts.conversation, remaining)
        if parts.images and chosen and chosen[-1]["role"] == "user":
            chosen[-1]["images"] = list(parts.images)
        messages.extend(chosen)
        used["conversation"] = sum(message_tokens(item) for item in chosen)
        total = sum(message_tokens(item) for item in messages) + parts.tool_tokens
        return BuiltContext(
            messages,
            total,
            parts.budget,
            used,
            dropped,
            plan,
            cut,
            parts.tool_tokens,
            partial(self._refit, parts),
        )

    def _refit(self, parts: _Parts, reading: int) -> list[Message]:
        """The messages of `parts` with `reading` tokens kept free for tool results."""
        return self._render(parts, reading, notify=False).messages

    async def _draft_layers(
        self, request: ContextRequest
    ) -> list[tuple[ContextLayer, Draft | None]]:
        """Every layer's draft for this turn, read concurrently; a failing layer adds nothing."""
        results = await asyncio.gather(
            *(layer.draft(request) for layer in self._layers), return_exceptions=True
        )
        drafts: list[tuple[ContextLayer, Draft | None]] = []
        for layer, result in zip(self._layers, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    raise result
                # Memory is an aid, never a reason for a turn to fail.
                log.error("context layer %s failed", layer.name, exc_info=result)
                drafts.append((layer, None))
            else:
                drafts.append((layer, result))
        return drafts

    def _system_text(
        self, settings: Settings, prompts: Prompts, *, has_tools: bool, notes: Sequence[str] = ()
    ) -> str:
        """The system prompt with the operator's extra text, the tool and layer intros and the
        turn's own notes."""
        parts = [prompts["system"]]
        if settings.system_prompt_extra:
            parts.append(settings.system_prompt_extra)
        if has_tools:
            parts.append(prompts["tool_system"])
        parts.append(prompts["layers_intro"])
        parts.extend(notes)
        return "\n\n".join(parts)


def _conversation(recent: Sequence[StoredMessage], request: ContextRequest) -> list[Message]:
    """The live messages up to this turn's (and answers to them), oldest first, ending with
    this turn's message: the model always reads what it answers, even if that message is no
    longer live (another process archived it, an erase replaced it)."""
    own = request.user_message_id
    conversation: list[Message] = [
        {"role": message.role, "content": _speaker_content(message)}
        for message in recent
        if message.order_key[0] <= own and message.id != own and message.role != FAILED_TURN_ROLE
    ]
    mine = next((message for message in recent if message.id == own), None)
    if mine is None:
        log.warning("message %d of session %s is not live; sent as asked", own, request.session_id)
        text = request.user_text
        name = request.author_name
        conversation.append({"role": "user", "content": f"[{name}] {text}" if name else text})
    else:
        conversation.append({"role": mine.role, "content": _speaker_content(mine)})
    return conversation


def _exchange_costs(conversation: Sequence[Message]) -> list[int]:
    """Token costs of the exchanges (a user message and what follows it), oldest first."""
    costs: list[int] = []
    for index, message in enumerate(conversation):
        cost = message_tokens(message)
        if message["role"] == "user" or index == 0:
            costs.append(cost)
        else:
            costs[-1] += cost
    return costs


def _fit_conversation(conversation: Sequence[Message], remaining: int) -> tuple[list[Message], int]:
    """The newest messages that fit `remaining`, oldest first, and how many older ones were
    left out. The newest message is always kept, cut if it must be."""
    chosen: list[Message] = []
    dropped = 0
    for index, original in enumerate(reversed(conversation)):
        item: Message = dict(original)
        cost = message_tokens(item)
        if index > 0 and cost > remaining:
            dropped = len(conversation) - index
            break
        if index == 0 and cost > remaining:
            item["content"] = truncate_to_tokens(
                item["content"], max(64, remaining - MESSAGE_OVERHEAD - 1)
            )
            cost = message_tokens(item)
        chosen.append(item)
        remaining -= cost
    chosen.reverse()
    return chosen, dropped
