"""Every non-Ollama provider through LiteLLM, imported only when such a model is used."""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import AsyncGenerator, Iterable, Iterator
from contextlib import aclosing
from types import ModuleType
from typing import Any

from bot.llm.backend import BackendError, BackendUnavailable, ProtocolError, describe_not_json
from bot.llm.types import (
    Completion,
    Embeddings,
    Message,
    StreamDelta,
    ToolCall,
    ToolSchema,
    Usage,
)

log = logging.getLogger(__name__)

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})
PROTOCOL = "OpenAI-compatible"
# What LiteLLM says when a 200 reply could not be read as the protocol (it reports HTTP 500).
_UNREADABLE = ("empty or invalid response from llm endpoint", "response with no 'choices'")
# An exception from these packages means the call failed (network, HTTP status, provider);
# anything else at the bottom of the chain is LiteLLM failing on our side of the wire.
CALL_FAILURE_PACKAGES = frozenset(
    {"litellm", "openai", "anthropic", "httpx", "httpcore", "aiohttp"}
)


def import_litellm() -> ModuleType:
    """Import LiteLLM without letting it reach for the internet (price list download)."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    # In its default DEV mode LiteLLM copies the working folder's .env into os.environ on import;
    # PlayChat reads .env through its own settings, so nothing else should see those secrets.
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
    module = importlib.import_module("litellm")
    setattr(module, "telemetry", False)  # noqa: B010 - attributes unknown to the type checker
    setattr(module, "suppress_debug_info", True)  # noqa: B010
    return module


def causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and what it wraps, outermost first (LiteLLM keeps some in `original_exception`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        wrapped = getattr(current, "original_exception", None)
        if isinstance(wrapped, BaseException) and id(wrapped) not in seen:
            current = wrapped
        else:
            current = current.__cause__ or current.__context__


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception `exc` wraps (itself when it wraps none)."""
    *_, root = causes(exc)
    return root


def failed_on_our_side(exc: BaseException) -> bool:
    """Whether LiteLLM itself broke (a Python error, a warning made an error), not the call."""
    root = root_cause(exc)
    if isinstance(root, OSError):
        return False
    return type(root).__module__.partition(".")[0] not in CALL_FAILURE_PACKAGES


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in OpenAI format; images become image_url content parts."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        item = {key: value for key, value in message.items() if key != "images"}
        if message.get("images"):
            parts: list[dict[str, Any]] = [{"type": "text", "text": message.get("content") or ""}]
            parts.extend(
                {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{image}"}}
                for image in message["images"]
            )
            item["content"] = parts
        converted.append(item)
    return converted


class LiteLLMBackend:
    """Talks to any provider LiteLLM supports (OpenAI, Anthropic, OpenAI-compatible…)."""

    def __init__(self, api_base: str | None, *, timeout: float, api_key: str = "") -> None:
        self.api_base = api_base or None
        self._api_key = api_key or None
        self._timeout = timeout
        self._litellm = import_litellm()

    def _kwargs(self, model: str) -> dict[str, Any]:
        return {
            "model": model,
            "api_base": self.api_base,
            "api_key": self._api_key,
            "timeout": self._timeout,
            "num_retries": 0,
            "max_retries": 0,
        }

    def _error(self, exc: Exception, model: str, *, answered: bool = False) -> BackendError:
        """Classify a LiteLLM failure; `answered`: the provider's stream had already begun.

        Nothing that fails after the provider answered, or inside LiteLLM, is transient:
        retrying would send (and bill) the same request again for a reply that already came.
        """
        not_protocol = _unreadable_reply(exc)
        if not_protocol is not None:
            return ProtocolError(self.api_base or f"{model}'s provider", PROTOCOL, not_protocol)
        exceptions = self._litellm.exceptions
        status = getattr(exc, "status_code", None)
        where = f" at {self.api_base}" if self.api_base else ""
        if isinstance(exc, exceptions.Timeout):
            return BackendError(f"{model}{where} did not answer in time.", status=status)
        ours = failed_on_our_side(exc)
        if answered or ours:
            log.debug("LiteLLM call to %s failed (answered: %s)", model, answered, exc_info=exc)
            root = root_cause(exc)
            if ours:
                detail = f"{type(root).__name__}: {root}"
                return BackendError(
                    f"LiteLLM failed on the answer of {model}{where}: {detail}"[:500]
                )
            return BackendError(
                f"The answer from {model}{where} broke off ({type(root).__name__})."
            )
        if isinstance(exc, exceptions.APIConnectionError) and status in (None, 500):
            text = str(exc).lower()
            if "connect" in text or "refused" in text or "resolve" in text:
                return BackendUnavailable(
                    f"The model provider for {model}{where} is not reachable. "
                    "Check LLM_API_BASE and that the server is running."
                )
            return BackendError(
                f"The connection to {model}{where} broke off.", transient=True, status=status
            )
        if isinstance(exc, exceptions.AuthenticationError):
            return BackendError(f"{model}{where} refused the API key (LLM_API_KEY).", status=status)
        if isinstance(exc, exceptions.NotFoundError):
            return BackendError(f"The model {model} was not found{where}.", status=status)
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        if status is None:
            return BackendError(f"{model}{where} failed: {message}"[:500], transient=True)
        return BackendError(
            f"{model}{where} failed (HTTP {status}): {message}"[:500],
            transient=status in TRANSIENT_STATUS,
            status=status,
        )

    def _cost(self, model: str, usage: Usage) -> float | None:
        if usage.prompt_tokens is None:
            return None
        try:
            prompt_cost, completion_cost = self._litellm.cost_per_token(
                model=model,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens or 0,
            )
        except Exception:
            return None
        return float(prompt_cost + completion_cost)

    async def stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        context_tokens: int,
    ) -> AsyncGenerator[StreamDelta, None]:
        """Stream a chat answer; tool-call deltas are reassembled by index."""
        pending: dict[int, dict[str, str]] = {}
        usage = Usage()
        said = False
        kwargs = self._kwargs(model)
        if tools:
            kwargs["tools"] = tools
        try:
            response = await self._litellm.acompletion(
                messages=to_openai_messages(messages),
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
        except Exception as exc:  # LiteLLM maps provider errors to many types; all become ours
            raise self._error(exc, model) from exc
        where = self.api_base or f"{model}'s provider"
        content_type = _content_type(response)
        if content_type.startswith(("text/html", "application/xhtml")):
            # LiteLLM reads an HTML page as an empty stream that finished normally.
            await response.aclose()
            raise ProtocolError(where, PROTOCOL, f"an HTML page ({content_type})", status=200)
        try:
            # Closing this stream early (a caller's bound) closes the HTTP response at once.
            async with aclosing(response) as chunks:
                async for chunk in chunks:
                    chunk_usage = getattr(chunk, "usage", None)
                    if chunk_usage:
                        usage = Usage(chunk_usage.prompt_tokens, chunk_usage.completion_tokens)
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    _collect_tool_calls(pending, getattr(delta, "tool_calls", None) or ())
                    if delta.content:
                        said = True
                        yield StreamDelta(text=delta.content)
        except Exception as exc:  # LiteLLM raises many types mid-stream; all become BackendError
            raise self._error(exc, model, answered=True) from exc
        silent = not (said or pending or _reported(usage))
        if silent and content_type and not content_type.startswith("text/event-stream"):
            # Not a stream of events and nothing in it: LiteLLM found no chunk to read.
            detail = f"a body of type {content_type} instead of a stream of events"
            raise ProtocolError(where, PROTOCOL, detail, status=200)
        usage.cost = self._cost(model, usage)
        yield StreamDelta(tool_calls=_assembled_calls(pending), usage=usage, done=True)

    async def complete(
        self, model: str, messages: list[Message], context_tokens: int
    ) -> Completion:
        """A whole answer without tools."""
        try:
            response = await self._litellm.acompletion(
                messages=to_openai_messages(messages), **self._kwargs(model)
            )
        except Exception as exc:
            raise self._error(exc, model) from exc
        choice = response.choices[0].message
        usage = Usage(response.usage.prompt_tokens, response.usage.completion_tokens)
        usage.cost = self._cost(model, usage)
        calls = [
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
            for call in (choice.tool_calls or ())
        ]
        return Completion(text=choice.content or "", tool_calls=calls, usage=usage)

    async def embed(self, model: str, texts: list[str]) -> Embeddings:
        """Embeddings through the provider's embeddings endpoint."""
        kwargs = self._kwargs(model)
        kwargs.pop("max_retries")
        try:
            response = await self._litellm.aembedding(input=texts, **kwargs)
        except Exception as exc:
            raise self._error(exc, model) from exc
        reported = getattr(response, "usage", None)
        usage = Usage(getattr(reported, "prompt_tokens", None) if reported else None)
        usage.cost = self._cost(model, usage)
        return Embeddings([list(item["embedding"]) for item in response.data], usage)

    async def list_models(self) -> list[str]:
        """LiteLLM cannot list a provider's models in general."""
        return []

    async def close(self) -> None:
        """LiteLLM keeps its own pooled clients; nothing to release per backend."""


def _reported(usage: Usage) -> bool:
    """True when the stream reported token counts."""
    return usage.prompt_tokens is not None or usage.completion_tokens is not None


def _content_type(response: Any) -> str:
    """The Content-Type the provider answered with, as LiteLLM reports it ('' if unknown)."""
    hidden = getattr(response, "_hidden_params", None)
    headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
    value = headers.get("llm_provider-content-type") if isinstance(headers, dict) else None
    return value.strip().lower() if isinstance(value, str) else ""


def _unreadable_reply(exc: BaseException) -> str | None:
    """What the reply was when LiteLLM failed because it is not the protocol, else None."""
    for current in causes(exc):
        if isinstance(current, json.JSONDecodeError):
            return describe_not_json(current.doc)
        text = str(current)
        if any(marker in text.lower() for marker in _UNREADABLE):
            received = text.partition("Received: ")[2]
            return (
                describe_not_json(received.strip("'\"")) if received else "JSON without 'choices'"
            )
    return None


def arguments_text(arguments: dict[str, Any] | str) -> str:
    """Tool-call arguments as the JSON string OpenAI-style messages carry."""
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _collect_tool_calls(pending: dict[int, dict[str, str]], parts: Iterable[Any]) -> None:
    """Add streamed tool-call fragments to `pending`, by their index."""
    for call in parts:
        index = call.index or 0
        slot = pending.setdefault(index, {"id": "", "name": "", "args": ""})
        slot["id"] = call.id or slot["id"]
        if call.function is not None:
            slot["name"] = call.function.name or slot["name"]
            slot["args"] += call.function.arguments or ""


def _assembled_calls(pending: dict[int, dict[str, str]]) -> list[ToolCall]:
    """The finished tool calls, in index order (fragments without a name are dropped)."""
    return [
        ToolCall(id=slot["id"] or f"call_{index + 1}", name=slot["name"], arguments=slot["args"])
        for index, slot in sorted(pending.items())
        if slot["name"]
    ]
