"""Long-term memory: summarise old messages; condense summaries that outgrow their layer.

Condensing is asked for by the context builder when the live summaries did not all fit the
memory layer's allotment at the configured window (bot/chat/context.py); it runs after that
turn, in the turn's background hook, so it never competes with the answer for the model.
Until it is done the context shows the newest summaries that fit under a one-line marker.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.chat.budget.tokens import estimate_tokens
from bot.chat.pending import PendingTurns
from bot.config import Settings
from bot.errors import LLMError
from bot.llm.gateway import LLMGateway
from bot.prompts import prompts_for
from bot.store.repos.memories import Memory, MemoryRepository
from bot.store.repos.messages import FAILED_TURN_ROLE, MessageRepository, StoredMessage
from bot.utils.locks import KeyedLocks

log = logging.getLogger(__name__)

MemoryListener = Callable[[Memory], Awaitable[None]]
# Sessions waiting to be condensed are few; the cap only bounds sessions that never speak again.
MAX_CONDENSE_REQUESTS = 1000


def transcript(messages: list[StoredMessage]) -> str:
    """Messages as `speaker: text` lines for the summariser."""
    lines = []
    for message in messages:
        if message.role == FAILED_TURN_ROLE:
            continue  # a failed turn's notice says nothing about the conversation
        speaker = message.author_name or message.role
        lines.append(f"{speaker}: {message.content}")
    return "\n".join(lines)


class Summarizer:
    """Keeps a session's live history short: at N live messages, the oldest N/2 are summarised.

    Only messages before the oldest pending turn's message count for that half (`pending`:
    this process's turns; and the first unanswered message after the newest answered one, for
    turns another process runs): a message waiting for its answer, and everything after it,
    stays live until it is answered.
    """

    def __init__(
        self,
        settings: Callable[[], Settings],
        gateway: LLMGateway,
        messages: MessageRepository,
        memories: MemoryRepository,
        *,
        on_memory: MemoryListener | None = None,
        pending: PendingTurns | None = None,
    ) -> None:
        self._settings = settings
        self._pending = pending if pending is not None else PendingTurns()
        self._gateway = gateway
        self._messages = messages
        self._memories = memories
        self._on_memory = on_memory
        self._locks = KeyedLocks()
        self._condense_requests: dict[str, int] = {}

    def request_condense(self, session_id: str, budget_tokens: int) -> None:
        """Condense the session's summaries after this turn: they did not fit `budget_tokens`."""
        self._condense_requests.pop(session_id, None)
        self._condense_requests[session_id] = budget_tokens
        while len(self._condense_requests) > MAX_CONDENSE_REQUESTS:
            del self._condense_requests[next(iter(self._condense_requests))]

    async def maybe_summarize(self, space: str, session_id: str) -> list[Memory]:
        """Summarise while the session is over the threshold; then condense if it was asked."""
        created: list[Memory] = []
        async with self._locks.hold(session_id):
            settings = self._settings()
            threshold = max(4, settings.memory_summarize_threshold)
            while await self._messages.count_live(space, session_id) >= threshold:
                memory = await self._summarize_oldest(space, session_id, threshold // 2, settings)
                if memory is None:
                    break
                created.append(memory)
            target = self._condense_requests.pop(session_id, None)
            condensed = None
            if target is not None:
                condensed = await self._maybe_condense(space, session_id, settings, target)
            if condensed is not None:
                created.append(condensed)
        if self._on_memory is not None:
            for memory in created:
                await self._on_memory(memory)
        return created

    async def _summarize_oldest(
        self, space: str, session_id: str, count: int, settings: Settings
    ) -> Memory | None:
        bounds = (
            self._pending.oldest(space, session_id),
            await self._messages.first_unanswered(space, session_id),
        )
        before = min((bound for bound in bounds if bound is not None), default=None)
        batch = await self._messages.oldest_live(space, session_id, count, before=before)
        if len(batch) < count:
            # The oldest half reaches a turn still waiting for its answer: the summary waits
            # for that answer (the turn's end runs this again).
            return None
        prompts = prompts_for(settings.language)
        try:
            result = await self._gateway.complete(
                [
                    {"role": "system", "content": prompts["summarize_system"]},
                    {
                        "role": "user",
                        "content": prompts.format("summarize_user", transcript=transcript(batch)),
                    },
                ],
                session_id=session_id,
                purpose="summarize",
            )
        except LLMError as exc:
            # The gateway logged the failure (one WARNING per call); this is what follows from it.
            log.info("summary of session %s postponed: %s", session_id, exc)
            return None
        summary = result.text.strip()
        if not summary:
            log.warning("summary of session %s was empty; postponed", session_id)
            return None
        # Only if the texts are still those it read: an erase meanwhile voids the summary.
        memory = await self._memories.summarize_messages(
            space,
            session_id,
            [message.id for message in batch],
            summary,
            written_from={message.id: message.content for message in batch},
        )
        if memory is not None:
            log.info("session %s: %d messages summarised", session_id, len(batch))
        return memory

    async def _maybe_condense(
        self, space: str, session_id: str, settings: Settings, target: int
    ) -> Memory | None:
        """One summary for all live ones, unless they now fit `target` tokens (or are < 2)."""
        live = await self._memories.live(space, session_id)
        prompts = prompts_for(settings.language)
        text = prompts["memory_header"] + "\n" + "\n\n".join(m.summary for m in live)
        if len(live) < 2 or estimate_tokens(text) <= target:
            return None
        joined = "\n\n".join(f"- ({memory.created_at[:10]}) {memory.summary}" for memory in live)
        try:
            result = await self._gateway.complete(
                [
                    {"role": "system", "content": prompts["condense_system"]},
                    {"role": "user", "content": prompts.format("condense_user", summaries=joined)},
                ],
                session_id=session_id,
                purpose="condense",
            )
        except LLMError as exc:
            log.info("condensing session %s postponed: %s", session_id, exc)
            return None
        summary = result.text.strip()
        if not summary:
            return None
        level = max(memory.level for memory in live) + 1
        return await self._memories.condense(
            space, session_id, [memory.id for memory in live], summary, level
        )
