"""The interface both LLM backends implement, and the errors they raise."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from bot.llm.types import Completion, Embeddings, Message, StreamDelta, ToolSchema


class BackendError(Exception):
    """A backend call failed; `transient` says whether retrying may help."""

    def __init__(self, message: str, *, transient: bool = False, status: int | None = None):
        super().__init__(message)
        self.transient = transient
        self.status = status


class BackendUnavailable(BackendError):
    """The backend cannot be reached (connection refused, DNS failure…)."""


class ChatBackend(Protocol):
    """One LLM provider: streaming chat with tools, completion, embeddings, model list."""

    def stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        context_tokens: int,
    ) -> AsyncIterator[StreamDelta]:
        """Stream the answer; the last delta has done=True, tool calls and usage."""
        ...

    async def complete(
        self, model: str, messages: list[Message], context_tokens: int
    ) -> Completion:
        """The whole answer at once, without tools."""
        ...

    async def embed(self, model: str, texts: list[str]) -> Embeddings:
        """One vector per text, with the prompt tokens counted when the backend reports them."""
        ...

    async def list_models(self) -> list[str]:
        """Models the backend offers (may be empty when it cannot tell)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
