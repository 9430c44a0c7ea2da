"""Every non-Ollama provider through LiteLLM, imported only when such a model is used."""

from __future__ import annotations

import importlib
import json
import logging
import os
from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing
from types import ModuleType
from typing import Any

import httpx

from bot.llm.backend import (
    BackendError,
    ModelErrorKind,
    Target,
    causes,
    connection_failure,
    describe_not_json,
    dropped,
    http_error,
    internal,
    interrupted,
    mentions_missing_key,
    no_api_key,
    protocol_error,
    retry_after,
    root_cause,
    timed_out,
    unreachable,
)
from bot.llm.types import (
    Completion,
    Embeddings,
    Message,
    StreamDelta,
    ToolCall,
    ToolSchema,
    Usage,
)
from bot.utils.log_setup import adopt_litellm_logging

log = logging.getLogger(__name__)

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
    adopt_litellm_logging()
    return module


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


# Sent as the key to a server at LLM_API_BASE when none is set (keyless local servers).
KEYLESS_PLACEHOLDER = "sk-no-key-required"


class LiteLLMBackend:
    """Talks to any provider LiteLLM supports (OpenAI, Anthropic, OpenAI-compatible…)."""

    def __init__(self, api_base: str | None, *, timeout: float, api_key: str = "") -> None:
        self.api_base = api_base or None
        self._api_key = api_key or None
        self._timeout = timeout
        self._litellm = import_litellm()

    def _kwargs(self, model: str, max_tokens: int | None = None) -> dict[str, Any]:
        # A local OpenAI-compatible server (llama.cpp, LM Studio, vLLM) needs no key, but the
        # openai client refuses to send a request without one: a placeholder goes instead.
        key = self._api_key or (KEYLESS_PLACEHOLDER if self.api_base else None)
        kwargs: dict[str, Any] = {
            "model": model,
            "api_base": self.api_base,
            "api_key": key,
            "timeout": self._timeout,
            "num_retries": 0,
            "max_retries": 0,
        }
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        return kwargs

    def _target(self, model: str, *, embedding: bool = False, context: int | None = None) -> Target:
        return Target(
            model=model,
            base=self.api_base,
            embedding=embedding,
            context_tokens=context,
            has_key=self._api_key is not None,
        )

    def _error(self, exc: Exception, target: Target, *, answered: bool = False) -> BackendError:
        """Classify a LiteLLM failure; `answered`: the provider's stream had already begun.

        Nothing that fails after the provider answered, or inside LiteLLM, is transient:
        retrying would send (and bill) the same request again for a reply that already came.
        LiteLLM reports a refused connection as HTTP 500; the cause chain tells what happened.
        """
        not_protocol = _unreadable_reply(exc)
        if not_protocol is not None:
            return protocol_error(target.base or target.where, PROTOCOL, not_protocol)
        ours = failed_on_our_side(exc)
        if answered or ours:
            log.debug("LiteLLM call to %s failed (answered: %s)", target.model, answered)
            if ours:
                root = root_cause(exc)
                return internal(
                    f"LiteLLM failed on the answer of {target.model} from {target.where}: "
                    f"{type(root).__name__}: {root}"
                )
            return interrupted(target, exc)
        reason = connection_failure(exc)
        if reason is not None:
            return unreachable(target, reason)
        exceptions = self._litellm.exceptions
        if isinstance(exc, exceptions.Timeout) or any(
            isinstance(current, httpx.TimeoutException | TimeoutError) for current in causes(exc)
        ):
            return timed_out(target, self._timeout)
        status = _http_status(exc)
        if status is not None:
            return http_error(status, _provider_text(exc), target, wait=retry_after(exc))
        # No HTTP answer came: LiteLLM or the provider's client refused to send the request.
        if not target.has_key and (
            isinstance(exc, exceptions.AuthenticationError) or mentions_missing_key(exc)
        ):
            return no_api_key(target)
        if isinstance(exc, exceptions.AuthenticationError):
            return BackendError(
                f"LiteLLM did not send the request for {target.model}: {_provider_text(exc)}; "
                "set LLM_API_KEY to a key for this provider."[:500],
                kind=ModelErrorKind.AUTHENTICATION,
            )
        if isinstance(exc, exceptions.BadRequestError):
            return BackendError(
                f"LiteLLM did not send the request for {target.model}: {_provider_text(exc)}; "
                "check LLM_MODEL (provider/model, e.g. openai/gpt-4o-mini)."[:500],
                kind=ModelErrorKind.BAD_REQUEST,
            )
        return dropped(target, exc)

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

    async def _open_stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        context_tokens: int,
        max_tokens: int | None,
    ) -> Any:
        """LiteLLM's stream of the chat call (its errors become ours)."""
        kwargs = self._kwargs(model, max_tokens)
        if tools:
            kwargs["tools"] = tools
        try:
            return await self._litellm.acompletion(
                messages=to_openai_messages(messages),
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
        except Exception as exc:  # LiteLLM maps provider errors to many types; all become ours
            raise self._error(exc, self._target(model, context=context_tokens)) from exc

    async def stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        context_tokens: int,
        *,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[StreamDelta, None]:
        """Stream a chat answer; tool-call deltas are reassembled by index."""
        pending: dict[int, dict[str, str]] = {}
        usage = Usage()
        said = False
        finish: str | None = None
        response = await self._open_stream(model, messages, tools, context_tokens, max_tokens)
        where = self.api_base or f"{model}'s provider"
        content_type = _content_type(response)
        if content_type.startswith(("text/html", "application/xhtml")):
            # LiteLLM reads an HTML page as an empty stream that finished normally.
            await response.aclose()
            raise protocol_error(where, PROTOCOL, f"an HTML page ({content_type})", status=200)
        try:
            # Closing this stream early (a caller's bound) closes the HTTP response at once.
            async with aclosing(response) as chunks:
                async for chunk in chunks:
                    chunk_usage = getattr(chunk, "usage", None)
                    if chunk_usage:
                        usage = Usage(chunk_usage.prompt_tokens, chunk_usage.completion_tokens)
                    if not chunk.choices:
                        continue
                    finish = getattr(chunk.choices[0], "finish_reason", None) or finish
                    delta = chunk.choices[0].delta
                    _collect_tool_calls(pending, getattr(delta, "tool_calls", None) or ())
                    if delta.content:
                        said = True
                        yield StreamDelta(text=delta.content)
        except Exception as exc:  # LiteLLM raises many types mid-stream; all become BackendError
            target = self._target(model, context=context_tokens)
            raise self._error(exc, target, answered=True) from exc
        if not _server_counted(response):
            # LiteLLM counts a stream the server sent no counts for by itself, over the
            # messages only (no tool schemas): not the server's count. The gateway estimates
            # the whole request instead and marks it estimated.
            usage = Usage()
        silent = not (said or pending or _reported(usage))
        if silent and content_type and not content_type.startswith("text/event-stream"):
            # Not a stream of events and nothing in it: LiteLLM found no chunk to read.
            detail = f"a body of type {content_type} instead of a stream of events"
            raise protocol_error(where, PROTOCOL, detail, status=200)
        usage.cost = self._cost(model, usage)
        yield StreamDelta(
            tool_calls=_assembled_calls(pending), usage=usage, done=True, finish=finish
        )

    async def complete(
        self,
        model: str,
        messages: list[Message],
        context_tokens: int,
        *,
        max_tokens: int | None = None,
    ) -> Completion:
        """A whole answer without tools."""
        try:
            response = await self._litellm.acompletion(
                messages=to_openai_messages(messages), **self._kwargs(model, max_tokens)
            )
        except Exception as exc:
            raise self._error(exc, self._target(model, context=context_tokens)) from exc
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
            raise self._error(exc, self._target(model, embedding=True)) from exc
        reported = getattr(response, "usage", None)
        usage = Usage(getattr(reported, "prompt_tokens", None) if reported else None)
        usage.cost = self._cost(model, usage)
        return Embeddings([list(item["embedding"]) for item in response.data], usage)

    async def list_models(self) -> list[str]:
        """LiteLLM cannot list a provider's models in general."""
        return []

    async def close(self) -> None:
        """LiteLLM keeps its own pooled clients; nothing to release per backend."""


def _server_counted(response: Any) -> bool:
    """Whether the provider's own chunks carried usage counts (LiteLLM keeps them as
    `chunks`); a LiteLLM without that record is trusted as before."""
    chunks = getattr(response, "chunks", None)
    if not isinstance(chunks, list):
        return True
    return any(getattr(chunk, "usage", None) is not None for chunk in chunks)


def _reported(usage: Usage) -> bool:
    """True when the stream reported token counts."""
    return usage.prompt_tokens is not None or usage.completion_tokens is not None


def _content_type(response: Any) -> str:
    """The Content-Type the provider answered with, as LiteLLM reports it ('' if unknown)."""
    hidden = getattr(response, "_hidden_params", None)
    headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
    value = headers.get("llm_provider-content-type") if isinstance(headers, dict) else None
    return value.strip().lower() if isinstance(value, str) else ""


def _http_status(exc: BaseException) -> int | None:
    """The status of the HTTP answer behind `exc`, None when no answer came.

    LiteLLM's own `status_code` cannot tell: it says 500 for a connection that was refused.
    """
    for current in causes(exc):
        if isinstance(current, httpx.HTTPStatusError):
            return current.response.status_code
        status = getattr(current, "status_code", None)
        response = getattr(current, "response", None)
        if (
            type(current).__module__.partition(".")[0] == "openai"
            and isinstance(status, int)
            and isinstance(response, httpx.Response)
        ):
            return status
        status = getattr(current, "status", None)
        if type(current).__name__ == "ClientResponseError" and isinstance(status, int):
            return status
    return None


def _provider_text(exc: BaseException) -> str:
    """The provider's own error message (with its code), without LiteLLM's prefixes."""
    for current in causes(exc):
        body = getattr(current, "body", None)
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            message: str = body["message"]
            code = body.get("code")
            if isinstance(code, str) and code and not code.isdigit() and code not in message:
                message = f"{message} ({code})"
            return message
    text = str(exc)
    if "Exception - " in text:
        return text.rpartition("Exception - ")[2]
    return text.removeprefix(f"litellm.{type(exc).__name__}: ")


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
