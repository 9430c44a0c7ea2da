"""The interface both LLM backends implement, and the errors they raise."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol

from bot.llm.types import Completion, Embeddings, Message, StreamDelta, ToolSchema

# How much of a reply that is not the protocol is quoted in the error.
QUOTE_CHARS = 60


class BackendError(Exception):
    """A backend call failed; `transient` says whether retrying may help.

    The message is one sentence naming the cause for the operator (logs, api_logs); `short`
    is its form for the person chatting (no addresses, no details), the message by default.
    """

    def __init__(
        self,
        message: str,
        *,
        transient: bool = False,
        status: int | None = None,
        short: str | None = None,
    ):
        super().__init__(message)
        self.transient = transient
        self.status = status
        self.short = short or message


class BackendUnavailable(BackendError):
    """The backend cannot be reached (connection refused, DNS failure…)."""


class ProtocolError(BackendError):
    """The server answered, but not in the model's protocol (an HTML page, broken JSON…).

    `wrong_address` (the usual cause) adds that LLM_API_BASE probably names the wrong server;
    without it the server speaks the protocol but sent one malformed part (a tool call).
    """

    def __init__(
        self,
        where: str,
        protocol: str,
        detail: str,
        *,
        wrong_address: bool = True,
        status: int | None = None,
    ):
        if wrong_address:
            hint = "LLM_API_BASE probably points at the wrong thing"
            short = (
                f"The language model server answered with something that is not the {protocol} "
                "protocol; check LLM_API_BASE."
            )
        else:
            hint = "the model or the server produced a malformed reply"
            short = f"The language model sent a malformed reply ({detail})."
        super().__init__(
            f"The server at {where} answered with something that is not the {protocol} "
            f"protocol ({detail}); {hint}.",
            status=status,
            short=short,
        )
        self.detail = detail


def describe_not_json(text: str) -> str:
    """What a reply that should have been JSON was instead (an HTML page, some text…)."""
    head = text.lstrip()[:200].lower()
    if head.startswith(("<!doctype html", "<html")) or "<html" in head:
        return "an HTML page"
    if not head:
        return "an empty body"
    return f"text that is not JSON: {text.strip()[:QUOTE_CHARS]!r}"


class ChatBackend(Protocol):
    """One LLM provider: streaming chat with tools, completion, embeddings, model list."""

    def stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        context_tokens: int,
    ) -> AsyncGenerator[StreamDelta, None]:
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
