"""Token counts for every logged call: the server's when it sent them, else our estimate.

A stream stopped before its end (a turn's bound, a cancellation) never gets the server's final
counts, some servers send none at all, and a failed call has none: its api_logs row then carries
the project's estimate (bot/llm/tokens.py, scaled by the model's learned factor), marked as
estimated. Estimates are never fed back into the factor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.llm.tokens import estimate_tokens, prompt_tokens
from bot.llm.types import Message, ToolSchema, Usage


@dataclass(frozen=True)
class PromptShape:
    """What a call sent, to estimate its prompt tokens when the server does not say."""

    messages: Sequence[Message] = ()
    tools: Sequence[ToolSchema] | None = None
    texts: Sequence[str] = ()  # an embedding call's inputs

    def estimate(self) -> int:
        """Estimated tokens of the prompt (the estimator's own units)."""
        if self.texts:
            return sum(estimate_tokens(text) for text in self.texts)
        return prompt_tokens(self.messages, self.tools)


def counted_usage(
    usage: Usage | None,
    shape: PromptShape,
    answer: str | None,
    *,
    factor: float = 1.0,
    embedding: bool = False,
) -> Usage:
    """`usage` with each count the server did not send filled in from the estimator.

    `estimated` is set when any count is ours; an embedding writes no answer (0 tokens).
    """
    found = usage if usage is not None else Usage()
    prompt, completion = found.prompt_tokens, found.completion_tokens
    if completion is None and embedding:
        completion = 0
    estimated = found.estimated
    if prompt is None:
        prompt, estimated = round(shape.estimate() * factor), True
    if completion is None:
        completion, estimated = round(estimate_tokens(answer or "") * factor), True
    return replace(found, prompt_tokens=prompt, completion_tokens=completion, estimated=estimated)
