"""The real chat backend, noting the read pace its transport would read at for each delta."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, cast

from bot.llm.backend import ChatBackend, StreamDelta
from bot.llm.gateway import default_backend_factory
from bot.llm.pacing import current_pace
from bot.llm.types import Message, ToolSchema


def pace_now() -> float | None:
    """The seconds of the read pace in force here (None: no reader set one)."""
    pace = current_pace()
    return None if pace is None else pace.seconds


class PaceWitness:
    """Wraps a backend; notes (text, done, pace) as each delta is passed on, and the pace
    once the stream has ended (its body read to the end)."""

    def __init__(self, inner: ChatBackend) -> None:
        self._inner = inner
        self.seen: list[tuple[str, bool, float | None]] = []
        self.at_end: list[float | None] = []

    def text(self) -> str:
        """The text of every delta noted, joined."""
        return "".join(text for text, _, _ in self.seen)

    def paces(self) -> tuple[float | None, set[float | None]]:
        """The pace the first delta was read at, and the paces of all later ones."""
        return self.seen[0][2], {pace for _, _, pace in self.seen[1:]}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        context_tokens: int,
        *,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[StreamDelta, None]:
        """The inner backend's stream, noted."""
        inner = self._inner.stream(model, messages, tools, context_tokens, max_tokens=max_tokens)
        async for delta in inner:
            self.seen.append((delta.text, delta.done, pace_now()))
            yield delta
        self.at_end.append(pace_now())


class PaceWitnesses:
    """A backend factory (ServiceOptions.backend_factory) building witnessed real backends."""

    def __init__(self) -> None:
        self.built: list[PaceWitness] = []

    def __call__(self, kind: str, base: str, timeout: float, key: str) -> ChatBackend:
        witness = PaceWitness(default_backend_factory(kind, base, timeout, key))
        self.built.append(witness)
        return cast(ChatBackend, witness)
