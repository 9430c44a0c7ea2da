"""Values shared by the LLM gateway and its backends (provider-neutral)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

# Messages are OpenAI-style dicts: {"role", "content", "tool_calls"?, "tool_call_id"?, "name"?,
# "images"? (list of base64 strings, vision models only)}. Backends translate them.
Message = dict[str, Any]
ToolSchema = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """One function call requested by the model."""

    id: str
    name: str
    arguments: dict[str, Any] | str


@dataclass
class Usage:
    """Token counts and cost of one call, when the backend reports them."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    # A count is the project's estimate, not the server's (bot/llm/usage_estimate.py).
    estimated: bool = False


@dataclass
class StreamDelta:
    """A piece of a streamed answer: text, finished tool calls, or the final usage."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    done: bool = False
    # Why the server ended the answer, on the final delta when it says ("stop", "length"…).
    finish: str | None = None


@dataclass
class Completion:
    """A whole, non-streamed answer."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


@dataclass
class Embeddings:
    """One vector per input text, and the tokens the backend counted when it says."""

    vectors: list[list[float]]
    usage: Usage = field(default_factory=Usage)


class Completer(Protocol):
    """The part of the LLM gateway that writes one non-streamed answer (summaries, tags…)."""

    async def complete(
        self,
        messages: list[Message],
        *,
        model: str | None = None,
        session_id: str | None = None,
        purpose: str = "complete",
    ) -> Completion:
        """One non-streamed answer."""
        ...
