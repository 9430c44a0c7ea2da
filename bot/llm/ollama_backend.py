"""Native Ollama backend through the official `ollama` client (the default)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx
import ollama
import pydantic

from bot.config import strip_ollama_prefix
from bot.llm.backend import (
    BackendError,
    Target,
    connection_failure,
    describe_not_json,
    dropped,
    http_error,
    internal,
    interrupted,
    protocol_error,
    retry_after,
    timed_out,
    unreachable,
)
from bot.llm.ollama_transport import OllamaTransport
from bot.llm.tool_sets import PerToolSet
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

# Errors of the ollama client's own transport; anything else it raises means the reply was bad.
_TRANSPORT_ERRORS = (ollama.ResponseError, ConnectionError, httpx.HTTPError)
_WARM_UP_TOOL: ToolSchema = {
    "type": "function",
    "function": {
        "name": "warm_up",
        "description": "-",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


def to_ollama_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Translate OpenAI-style messages to Ollama's chat format."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message["role"], "content": message.get("content") or ""}
        if message.get("images"):
            item["images"] = list(message["images"])
        if message.get("tool_calls"):
            item["tool_calls"] = [
                {
                    "function": {
                        "name": call["function"]["name"],
                        "arguments": _arguments_dict(call["function"].get("arguments")),
                    }
                }
                for call in message["tool_calls"]
            ]
        if message["role"] == "tool" and message.get("name"):
            item["tool_name"] = message["name"]
        converted.append(item)
    return converted


_PROPERTY_KEYS = ("type", "items", "description", "enum")


def _ollama_property(prop: dict[str, Any]) -> dict[str, Any]:
    """One parameter in the subset Ollama's client keeps (type, items, description, enum)."""
    out = {key: prop[key] for key in _PROPERTY_KEYS if key in prop}
    if "type" not in out and isinstance(prop.get("anyOf"), list):
        members = [m for m in prop["anyOf"] if isinstance(m, dict)]
        types = [m["type"] for m in members if isinstance(m.get("type"), str)]
        real = [t for t in types if t != "null"]
        out["type"] = real[0] if len(real) == 1 else real or "string"
        for member in members:
            if "items" in member and "items" not in out:
                out["items"] = member["items"]
            if "enum" in member and "enum" not in out:
                out["enum"] = member["enum"]
    extra = {
        key: value
        for key, value in prop.items()
        if key not in _PROPERTY_KEYS and key not in ("anyOf", "title")
    }
    if extra:
        # The client would drop these keys; keep their meaning in the description instead.
        detail = json.dumps(extra, ensure_ascii=False, separators=(",", ":"))
        out["description"] = f"{out.get('description', '')} Schema: {detail}".strip()
    return out


def to_ollama_tools(tools: list[ToolSchema] | None) -> list[dict[str, Any]] | None:
    """Tool schemas reduced to what `ollama.Tool` keeps, without losing nested structure."""
    if not tools:
        return None
    converted = []
    for tool in tools:
        function = dict(tool.get("function", {}))
        params = dict(function.get("parameters") or {"type": "object", "properties": {}})
        properties = params.get("properties") or {}
        params["properties"] = {
            name: _ollama_property(prop) if isinstance(prop, dict) else prop
            for name, prop in properties.items()
        }
        function["parameters"] = params
        converted.append({"type": "function", "function": function})
    return converted


def _ollama_tool_models(tools: list[ToolSchema]) -> list[ollama.Tool]:
    """`tools` as the client's ready models (it does not validate those again)."""
    return [ollama.Tool.model_validate(spec) for spec in to_ollama_tools(tools) or ()]


def _arguments_dict(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _options(context_tokens: int, max_tokens: int | None) -> dict[str, int]:
    """A chat call's model options: its window and, when given, the answer's limit."""
    options = {"num_ctx": context_tokens}
    if max_tokens is not None:
        options["num_predict"] = max_tokens
    return options


@dataclass
class _ChatReading:
    """What a chat stream has brought so far: its parts, its tool calls, its final line."""

    parts: int = 0
    calls: list[ToolCall] = field(default_factory=list)
    finished: bool = False

    def deltas(self, part: ollama.ChatResponse) -> Iterator[StreamDelta]:
        """The deltas one part of the stream brings (the final one once, with the calls)."""
        self.parts += 1
        message = part.message
        for call in message.tool_calls or ():
            self.calls.append(
                ToolCall(
                    id=f"call_{len(self.calls) + 1}",
                    name=call.function.name,
                    arguments=dict(call.function.arguments or {}),
                )
            )
        if message.content:
            yield StreamDelta(text=message.content)
        if part.done and not self.finished:
            # Said at once: the reader stops pacing its reads, and the stream's end (the
            # body's last bytes, just behind this line) is read at once.
            self.finished = True
            usage = Usage(part.prompt_eval_count, part.eval_count)
            yield StreamDelta(
                tool_calls=self.calls, usage=usage, done=True, finish=part.done_reason
            )


class OllamaBackend:
    """Talks to an Ollama server with `ollama.AsyncClient`."""

    def __init__(self, host: str, *, timeout: float, api_key: str = "") -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self.host = host
        self._has_key = bool(api_key)
        self._timeout = timeout
        # The one seam of our transport under the client (bot.llm.ollama_transport): aiohttp
        # under httpx, which also carries the read pace (bot.llm.pacing). Measured in the
        # tricks ledger (bench/README.md, bench/discord_turn.py): bot CPU per warm reply 14.8
        # ms vs 43.0 with the client's own httpcore/anyio/h11 stack; 32 vs 45 ms even with
        # reads unpaced; cold first visible text 13 vs 43 ms. One client serves every call.
        self._transport = OllamaTransport()
        self._client = ollama.AsyncClient(
            host=host, timeout=timeout, headers=headers, transport=self._transport
        )
        # The client would validate each tool dict into an `ollama.Tool` on every call.
        self._tools = PerToolSet(_ollama_tool_models)

    def warm_up(self) -> None:
        """Load now (blocking; run on a thread) what the first call would load on the loop."""
        if self.host.startswith("https:"):
            self._transport.load_tls()
        tools = to_ollama_tools([_WARM_UP_TOOL]) or []
        ollama.Tool.model_validate(tools[0])
        ollama.Message.model_validate({"role": "user", "content": "-"})
        ollama.ChatResponse.model_validate(
            {"model": "-", "message": {"role": "assistant", "content": "-"}, "done": True}
        )

    def _target(self, model: str, *, embedding: bool = False, context: int | None = None) -> Target:
        return Target(
            model=model,
            base=self.host,
            ollama=True,
            embedding=embedding,
            context_tokens=context,
            has_key=self._has_key,
        )

    def _error(self, exc: Exception, target: Target) -> BackendError:
        """Classify a failure of the ollama client's transport (or an HTTP error answer)."""
        if isinstance(exc, ollama.ResponseError):
            # The client drops the response, but the httpx error it came from keeps the headers.
            wait = retry_after(exc)
            return http_error(exc.status_code, str(exc.error), target, wait=wait)
        reason = connection_failure(exc)
        if reason is not None or isinstance(exc, ConnectionError):
            return unreachable(target, reason or "no connection could be made")
        if isinstance(exc, httpx.TimeoutException):
            return timed_out(target, self._timeout)
        if isinstance(exc, httpx.HTTPError):
            return dropped(target, exc)
        return internal(f"The ollama client failed: {type(exc).__name__}: {exc}")

    def _failure(self, exc: Exception, target: Target) -> BackendError:
        """Any failure of a call: the transport's, or a reply that is not Ollama's protocol."""
        if isinstance(exc, _TRANSPORT_ERRORS):
            return self._error(exc, target)
        return self._malformed(exc)

    def _malformed(self, exc: Exception) -> BackendError:
        """The server answered with status 200, but the body does not speak Ollama's protocol."""
        if isinstance(exc, json.JSONDecodeError):
            return protocol_error(self.host, "Ollama", describe_not_json(exc.doc))
        if isinstance(exc, pydantic.ValidationError):
            errors = exc.errors()
            place = errors[0]["loc"] if errors else ()
            if "tool_calls" in place and "arguments" in place:
                detail = "a tool call whose arguments are not a JSON object"
                return protocol_error(self.host, "Ollama", detail, wrong_address=False)
            field = ".".join(str(part) for part in place) or "the reply"
            return protocol_error(self.host, "Ollama", f"JSON without Ollama's fields ({field})")
        if isinstance(exc, AttributeError | TypeError | KeyError):
            return protocol_error(self.host, "Ollama", "JSON that is not an Ollama chat object")
        return internal(f"The ollama client failed: {type(exc).__name__}: {exc}")

    async def stream(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        context_tokens: int,
        *,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[StreamDelta, None]:
        """Stream a chat answer; tool calls and usage come with the final delta."""
        reading = _ChatReading()
        try:
            response = await self._open_chat(
                model, messages, tools, _options(context_tokens, max_tokens)
            )
            # Closing this stream early (a caller's bound) closes the HTTP response at once.
            async with aclosing(response) as reply:  # type: ignore[type-var]
                async for part in reply:
                    for delta in reading.deltas(part):
                        yield delta
        except Exception as exc:
            if reading.finished and isinstance(exc, httpx.TransportError):
                # The answer was whole (its final line came); only the body's end was lost.
                log.debug("the stream's end was lost after its final line: %s", exc)
                return
            target = self._target(model, context=context_tokens)
            raise self._stream_failure(exc, target, reading.parts) from exc
        if not reading.finished:
            raise self._unfinished(reading.parts)

    async def _open_chat(
        self,
        model: str,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        options: dict[str, int],
    ) -> AsyncIterator[ollama.ChatResponse]:
        """Send a streaming chat request; its parts, as the client parses them."""
        return await self._client.chat(
            model=strip_ollama_prefix(model),
            messages=to_ollama_messages(messages),
            tools=self._tools(tools) if tools else None,
            stream=True,
            options=options,
        )

    def _stream_failure(self, exc: Exception, target: Target, parts: int) -> BackendError:
        """A failure of a stream that brought `parts` parts before it."""
        if (
            parts
            and isinstance(exc, httpx.TransportError)
            and not isinstance(exc, httpx.TimeoutException)
        ):
            return interrupted(target, exc)
        return self._failure(exc, target)

    def _unfinished(self, parts: int) -> BackendError:
        """A stream that ended (with status 200) before Ollama's final line."""
        detail = (
            "a stream that ended without Ollama's final line"
            if parts
            else "an empty answer with status 200"
        )
        return protocol_error(self.host, "Ollama", detail)

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
            response = await self._client.chat(
                model=strip_ollama_prefix(model),
                messages=to_ollama_messages(messages),
                stream=False,
                options=_options(context_tokens, max_tokens),
            )
        except Exception as exc:
            raise self._failure(exc, self._target(model, context=context_tokens)) from exc
        return Completion(
            text=response.message.content or "",
            usage=Usage(response.prompt_eval_count, response.eval_count),
        )

    async def embed(self, model: str, texts: list[str]) -> Embeddings:
        """Embeddings through /api/embed."""
        try:
            response = await self._client.embed(model=strip_ollama_prefix(model), input=texts)
        except Exception as exc:
            raise self._failure(exc, self._target(model, embedding=True)) from exc
        return Embeddings(
            [list(vector) for vector in response.embeddings], Usage(response.prompt_eval_count)
        )

    async def list_models(self) -> list[str]:
        """Names of the models pulled on the Ollama server."""
        try:
            response = await self._client.list()
        except Exception as exc:
            raise self._failure(exc, self._target("")) from exc
        return [f"ollama/{item.model}" for item in response.models if item.model]

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()  # type: ignore[no-untyped-call]
