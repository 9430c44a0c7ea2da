"""Context assembly: system prompt and memory layers fitted to the model's window by tokens."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from bot.chat.tokens import estimate_tokens, message_tokens, truncate_to_tokens
from bot.config import Settings
from bot.llm.types import Message, ToolSchema
from bot.prompts import Prompts, prompts_for
from bot.store.memories import Memory, MemoryRepository
from bot.store.messages import MessageRepository, StoredMessage

# How much of the window the answer may need; the rest is shared by the prompt.
ANSWER_RESERVE_SHARE = 0.2
MIN_ANSWER_RESERVE = 512
MEMORY_SHARE = 0.15
RECENT_MESSAGE_LIMIT = 100
# More summaries than this never fit the memory share of a window; condensing keeps it lower.
MEMORY_LIMIT = 100


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


class ContextLayer(Protocol):
    """A memory layer that contributes one system message (or nothing)."""

    name: str

    async def render(self, request: ContextRequest, budget_tokens: int) -> str | None:
        """The layer's text, at most `budget_tokens` tokens, or None when it has nothing."""
        ...


@dataclass(frozen=True)
class LayerSlot:
    """A layer and the share of the prompt budget it may use at most."""

    layer: ContextLayer
    share: float


@dataclass
class BuiltContext:
    """Messages for the model and how the budget was spent."""

    messages: list[Message]
    tokens: int
    budget: int
    layer_tokens: dict[str, int] = field(default_factory=dict)
    dropped_messages: int = 0


def _speaker_content(message: StoredMessage) -> str:
    if message.role == "user" and message.author_name:
        return f"[{message.author_name}] {message.content}"
    return message.content


class ContextBuilder:
    """Builds one turn's messages (system, memory layers, summaries, conversation) in a budget."""

    def __init__(
        self,
        messages: MessageRepository,
        memories: MemoryRepository,
        layers: Sequence[LayerSlot] = (),
    ) -> None:
        self._messages = messages
        self._memories = memories
        self._layers = list(layers)

    async def build(
        self,
        request: ContextRequest,
        *,
        tools: Sequence[ToolSchema] = (),
        images: Sequence[str] = (),
    ) -> BuiltContext:
        """The messages to send: system, layers, long-term memory, recent conversation."""
        settings = request.settings
        prompts = prompts_for(settings.language)
        window = settings.llm_context_tokens
        reserve = max(MIN_ANSWER_RESERVE, int(window * ANSWER_RESERVE_SHARE))
        system_text = self._system_text(settings, prompts, has_tools=bool(tools))
        tool_tokens = estimate_tokens(json.dumps(list(tools), ensure_ascii=False)) if tools else 0
        budget = max(256, window - reserve - tool_tokens)
        remaining = budget - estimate_tokens(system_text)

        layer_budgets = [max(0, int(budget * slot.share)) for slot in self._layers]
        layer_texts, recent, memories = await asyncio.gather(
            self._render_layers(request, layer_budgets),
            self._messages.recent_live(request.space_id, request.session_id, RECENT_MESSAGE_LIMIT),
            self._memories.live(request.space_id, request.session_id, MEMORY_LIMIT),
        )

        messages: list[Message] = [{"role": "system", "content": system_text}]
        used: dict[str, int] = {}
        remaining = self._fit_layers(layer_texts, layer_budgets, remaining, messages, used)
        memory_budget = min(int(budget * MEMORY_SHARE), max(0, remaining))
        memory_text, spent = _fit_memories(memories, prompts["memory_header"], memory_budget)
        if memory_text is not None:
            messages.append({"role": "system", "content": memory_text})
            used["memory"] = spent
            remaining -= spent

        chosen, dropped = _fit_conversation(recent, request.user_message_id, remaining)
        if images and chosen and chosen[-1]["role"] == "user":
            chosen[-1]["images"] = list(images)
        messages.extend(chosen)
        used["conversation"] = sum(message_tokens(item) for item in chosen)
        total = sum(message_tokens(item) for item in messages) + tool_tokens
        return BuiltContext(messages, total, budget, used, dropped)

    async def _render_layers(
        self, request: ContextRequest, budgets: Sequence[int]
    ) -> list[str | None]:
        """Every layer's text for this turn, rendered concurrently."""
        return await asyncio.gather(
            *(
                slot.layer.render(request, budget)
                for slot, budget in zip(self._layers, budgets, strict=True)
            )
        )

    def _system_text(self, settings: Settings, prompts: Prompts, *, has_tools: bool) -> str:
        """The system prompt with the operator's extra text and the tool and layer intros."""
        parts = [prompts["system"]]
        if settings.system_prompt_extra:
            parts.append(settings.system_prompt_extra)
        if has_tools:
            parts.append(prompts["tool_system"])
        if self._layers:
            parts.append(prompts["layers_intro"])
        return "\n\n".join(parts)

    def _fit_layers(
        self,
        texts: Sequence[str | None],
        budgets: Sequence[int],
        remaining: int,
        messages: list[Message],
        used: dict[str, int],
    ) -> int:
        """Append each layer's text cut to its budget; returns the tokens left afterwards."""
        for slot, text, layer_budget in zip(self._layers, texts, budgets, strict=True):
            if not text:
                continue
            fitted = truncate_to_tokens(text, min(layer_budget, max(0, remaining)))
            cost = estimate_tokens(fitted)
            if cost == 0:
                continue
            messages.append({"role": "system", "content": fitted})
            used[slot.layer.name] = cost
            remaining -= cost
        return remaining


def _fit_memories(memories: Sequence[Memory], header: str, budget: int) -> tuple[str | None, int]:
    """The newest summaries that fit `budget` under `header`, oldest first, and their cost."""
    kept: list[str] = []
    spent = estimate_tokens(header)
    for memory in reversed(memories):
        cost = estimate_tokens(memory.summary) + 2
        if spent + cost > budget:
            break
        kept.append(memory.summary)
        spent += cost
    if not kept:
        return None, 0
    body = "\n\n".join(reversed(kept))
    return f"{header}\n{body}", spent


def _fit_conversation(
    recent: Sequence[StoredMessage], user_message_id: int, remaining: int
) -> tuple[list[Message], int]:
    """The newest messages up to this turn's that fit `remaining`, oldest first, and how many
    older ones were left out. The newest message is always kept, cut if it must be."""
    conversation = [
        message
        for message in recent
        if message.id <= user_message_id
        or (message.reply_to is not None and message.reply_to <= user_message_id)
    ]
    chosen: list[Message] = []
    dropped = 0
    for index, stored in enumerate(reversed(conversation)):
        item: Message = {"role": stored.role, "content": _speaker_content(stored)}
        cost = message_tokens(item)
        if index > 0 and cost > remaining:
            dropped = len(conversation) - index
            break
        if index == 0 and cost > remaining:
            item["content"] = truncate_to_tokens(item["content"], max(64, remaining))
            cost = message_tokens(item)
        chosen.append(item)
        remaining -= cost
    chosen.reverse()
    return chosen, dropped
