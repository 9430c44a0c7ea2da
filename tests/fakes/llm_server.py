"""A scriptable loopback LLM server speaking Ollama's API and the OpenAI-compatible API.

Usage::

    async with FakeLLMServer() as llm:
        llm.script(Text("Hello world", chunks=3), ToolCalls([("web_search", {"query": "x"})]))
        client = ollama.AsyncClient(host=llm.url)            # Ollama protocol
        # or litellm.acompletion(model="openai/m", api_base=llm.openai_base, api_key="sk-test")
        ...
        assert llm.chat_requests[0].tools

Chat requests (``/api/chat`` and ``/v1/chat/completions``) consume one scripted reply each, in
FIFO order; embeddings and model listings are answered from ``embedder`` and ``models``.
Hostile replies: ``Endless`` (a model that never stops), ``Raw`` (an HTML page with 200 by
default), ``InvalidJson`` (a frame that is not JSON mid-stream), ``BadToolArguments``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import logging
import math
import re
import ssl
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

log = logging.getLogger(__name__)

Protocol = Literal["ollama", "openai"]

OLLAMA_CHAT = "/api/chat"
OPENAI_CHAT = "/v1/chat/completions"
CHAT_PATHS = frozenset({OLLAMA_CHAT, OPENAI_CHAT})
NO_REPLY_MESSAGE = "FakeLLMServer: no scripted reply"
EMBED_DIM = 64

_WORDS = re.compile(r"\S+\s*|\s+")
_TOKENS = re.compile(r"\w+|[^\w\s]")
_EMBED_TOKENS = re.compile(r"\w+")


# --------------------------------------------------------------------------- recorded requests


def _wants_usage(options: Any) -> bool:
    """Whether an OpenAI request's stream_options ask for the usage chunk."""
    return isinstance(options, dict) and options.get("include_usage") is True


@dataclass(frozen=True)
class RecordedRequest:
    """One HTTP request the fake received, recorded before it was answered."""

    method: str
    path: str
    json: Any
    headers: Mapping[str, str]
    body: bytes = b""
    query: Mapping[str, str] = field(default_factory=dict)

    @property
    def protocol(self) -> Protocol | None:
        """Which API the request used ("ollama" for /api/*, "openai" for /v1/*)."""
        if self.path.startswith("/api/"):
            return "ollama"
        if self.path.startswith("/v1/"):
            return "openai"
        return None

    @property
    def is_chat(self) -> bool:
        """True for /api/chat and /v1/chat/completions."""
        return self.path in CHAT_PATHS

    def _field(self, key: str) -> Any:
        return self.json.get(key) if isinstance(self.json, dict) else None

    @property
    def model(self) -> str | None:
        """The "model" field of the body, if any."""
        value = self._field("model")
        return value if isinstance(value, str) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages sent (empty if none)."""
        value = self._field("messages")
        return list(value) if isinstance(value, list) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tool schemas offered (empty if none)."""
        value = self._field("tools")
        return list(value) if isinstance(value, list) else []

    @property
    def tool_names(self) -> list[str]:
        """Names of the offered tools, in order."""
        return [
            str(tool.get("function", {}).get("name"))
            for tool in self.tools
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
        ]

    @property
    def answer_limit(self) -> int | None:
        """The answer's token limit sent (Ollama `options.num_predict`, OpenAI `max_tokens`)."""
        if self.protocol == "ollama":
            options = self._field("options")
            value = options.get("num_predict") if isinstance(options, dict) else None
        else:
            value = self._field("max_tokens")
            if value is None:
                value = self._field("max_completion_tokens")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def stream(self) -> bool:
        """Whether the client asked for streaming (Ollama defaults to true, OpenAI to false)."""
        value = self._field("stream")
        if isinstance(value, bool):
            return value
        return self.protocol == "ollama"


# --------------------------------------------------------------------------- replies


def _word_pieces(text: str) -> list[str]:
    return _WORDS.findall(text) or [""]


def _even_pieces(text: str, count: int) -> list[str]:
    size, extra = divmod(len(text), count)
    pieces: list[str] = []
    start = 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        pieces.append(text[start:end])
        start = end
    return pieces


def _count_tokens(text: str) -> int:
    return len(_TOKENS.findall(text))


def _check_pieces(text: str, chunks: int | Sequence[str] | None, what: str) -> list[str]:
    if chunks is None:
        return _word_pieces(text)
    if isinstance(chunks, bool) or not isinstance(chunks, int | list | tuple):
        raise TypeError(f"{what}: chunks must be an int, a list of str or None, not {chunks!r}")
    if isinstance(chunks, int):
        if chunks < 1:
            raise ValueError(f"{what}: chunks must be >= 1, got {chunks}")
        if chunks > max(1, len(text)):
            raise ValueError(f"{what}: cannot split {len(text)} characters into {chunks} pieces")
        return _even_pieces(text, chunks)
    pieces = list(chunks)
    if not pieces or not all(isinstance(p, str) for p in pieces):
        raise ValueError(f"{what}: chunks must be a non-empty list of str")
    if "".join(pieces) != text:
        raise ValueError(f"{what}: the pieces do not join to the text")
    return pieces


@dataclass(frozen=True)
class Text:
    """The model answers `text`, streamed in `chunks` pieces (None: one piece per word);
    with `after`, only once the test sets that event (a turn held in flight)."""

    text: str
    chunks: int | list[str] | None = None
    delay: float = 0.0
    prompt_tokens: int = 10
    completion_tokens: int | None = None
    after: asyncio.Event | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Text: text must be str, not {type(self.text).__name__}")
        if self.delay < 0:
            raise ValueError(f"Text: delay must be >= 0, got {self.delay}")
        _check_pieces(self.text, self.chunks, "Text")

    @property
    def pieces(self) -> list[str]:
        """The streamed pieces, in order; they join to `text`."""
        return _check_pieces(self.text, self.chunks, "Text")


@dataclass(frozen=True)
class ToolCalls:
    """The model asks for these tool calls (name, arguments); ids default to "call_N"."""

    calls: list[tuple[str, dict[str, Any]]]
    text: str = ""
    ids: list[str] | None = None
    prompt_tokens: int = 10
    completion_tokens: int | None = None

    def __post_init__(self) -> None:
        if not self.calls:
            raise ValueError("ToolCalls: at least one call is required")
        for call in self.calls:
            if (
                not isinstance(call, tuple | list)
                or len(call) != 2
                or not isinstance(call[0], str)
                or not isinstance(call[1], dict)
            ):
                raise TypeError(
                    f"ToolCalls: each call must be (name: str, args: dict), not {call!r}"
                )
            json.dumps(call[1])  # fail now, not inside the server, on unserialisable arguments
        if self.ids is not None and len(self.ids) != len(self.calls):
            raise ValueError("ToolCalls: ids must have one entry per call")


@dataclass(frozen=True)
class HttpError:
    """Answer with this HTTP status; a str body is wrapped in the protocol's error shape."""

    status: int
    body: str | dict[str, Any] = "FakeLLMServer: scripted error"
    headers: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError(f"HttpError: status must be 4xx or 5xx, got {self.status}")


@dataclass(frozen=True)
class Drop:
    """Stream `text` in `after_chunks` pieces, then abort the TCP connection.

    after_chunks=0, or a non-streaming request: abort before sending anything.
    after_final: the answer's final frames (done, usage) are sent too, and only the body's
    end (the chunked terminator) is lost.
    """

    after_chunks: int = 1
    text: str = "partial answer"
    after_final: bool = False

    def __post_init__(self) -> None:
        if self.after_chunks < 0:
            raise ValueError(f"Drop: after_chunks must be >= 0, got {self.after_chunks}")
        if self.after_chunks:
            _check_pieces(self.text, self.after_chunks, "Drop")

    @property
    def pieces(self) -> list[str]:
        """The pieces sent before the connection is aborted."""
        return _check_pieces(self.text, self.after_chunks, "Drop") if self.after_chunks else []


@dataclass(frozen=True)
class Hang:
    """Accept the request and never finish answering (until the server closes).

    By default nothing at all is sent; with after_chunks > 0 (streaming requests only) the
    headers and that many pieces of `text` are sent first, then the stream stalls.
    """

    after_chunks: int = 0
    text: str = "partial answer"

    def __post_init__(self) -> None:
        if self.after_chunks < 0:
            raise ValueError(f"Hang: after_chunks must be >= 0, got {self.after_chunks}")
        if self.after_chunks:
            _check_pieces(self.text, self.after_chunks, "Hang")

    @property
    def pieces(self) -> list[str]:
        """The pieces sent before the stream stalls."""
        return _check_pieces(self.text, self.after_chunks, "Hang") if self.after_chunks else []


@dataclass(frozen=True)
class Endless:
    """A model that never stops: the words of `text`, over and over, one every `interval` s.

    The stream goes on until the client goes away (recorded in `client_closed`), the server
    closes, or it reaches the answer limit the request carries (then it ends as a server does,
    with finish reason "length" and the counts). Successive pieces differ, as a real model's
    do. With `numbered` each cycle ends with its number, so the answer never repeats a passage
    (a model that goes on, not one that loops). Non-streaming requests get nothing (as with
    Hang).
    """

    text: str = "and then some more "
    interval: float = 0.005
    numbered: bool = False

    def __post_init__(self) -> None:
        if not self.text.strip():
            raise ValueError("Endless: text must have words")
        if self.interval < 0:
            raise ValueError(f"Endless: interval must be >= 0, got {self.interval}")

    @property
    def pieces(self) -> list[str]:
        """The pieces of one cycle."""
        return _word_pieces(self.text)

    def stream(self) -> Iterator[str]:
        """Every piece of the endless answer, in order."""
        for cycle in itertools.count(1):
            yield from self.pieces
            if self.numbered:
                yield f"{cycle} "


HTML_PAGE = (
    "<!DOCTYPE html>\n<html>\n<head><title>Welcome</title></head>\n"
    "<body>\n<h1>It works!</h1>\n<p>This is not a language model.</p>\n</body>\n</html>\n"
)


@dataclass(frozen=True)
class Raw:
    """Answer `body` as-is with `status` and `content_type`: not the protocol at all.

    The default is what a web server or a login page answers: an HTML page with status 200.
    """

    body: str | bytes = HTML_PAGE
    status: int = 200
    content_type: str = "text/html; charset=utf-8"

    @property
    def data(self) -> bytes:
        """The body as bytes."""
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body


@dataclass(frozen=True)
class InvalidJson:
    """Stream `text` in `after_chunks` pieces, then a frame that is not JSON (`line`)."""

    after_chunks: int = 1
    text: str = "partial answer"
    line: str = "{this is not json"

    def __post_init__(self) -> None:
        if self.after_chunks < 0:
            raise ValueError(f"InvalidJson: after_chunks must be >= 0, got {self.after_chunks}")
        if self.after_chunks:
            _check_pieces(self.text, self.after_chunks, "InvalidJson")

    @property
    def pieces(self) -> list[str]:
        """The well-formed pieces sent before the bad frame."""
        if not self.after_chunks:
            return []
        return _check_pieces(self.text, self.after_chunks, "InvalidJson")


@dataclass(frozen=True)
class BadToolArguments:
    """A tool call whose arguments are `arguments`, a string that is not a JSON object.

    Ollama carries arguments as an object, so there the string itself breaks the protocol;
    OpenAI carries a JSON string, so there it is a string that does not parse.
    """

    name: str = "web_search"
    arguments: str = "query=kyoto weather"


Reply = Text | ToolCalls | HttpError | Drop | Hang | Endless | Raw | InvalidJson | BadToolArguments
ReplyFn = Callable[[RecordedRequest], Reply]
ScriptItem = Reply | ReplyFn
_REPLY_TYPES = (Text, ToolCalls, HttpError, Drop, Hang, Endless, Raw, InvalidJson, BadToolArguments)


def hashing_embedder(text: str, dim: int = EMBED_DIM) -> list[float]:
    """Deterministic bag-of-words hashing vector (L2-normalised): similar texts score high."""
    tokens = _EMBED_TOKENS.findall(text.lower()) or [""]
    vector = [0.0] * dim
    for token in tokens:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        slot = int.from_bytes(digest[:4], "little") % dim
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0:  # every token cancelled out; any fixed unit vector keeps cosine defined
        vector[0], norm = 1.0, 1.0
    return [v / norm for v in vector]


# --------------------------------------------------------------------------- wire formats


@dataclass(frozen=True)
class _Call:
    id: str
    name: str
    # A str is sent as-is: the BadToolArguments reply.
    arguments: dict[str, Any] | str

    @property
    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


@dataclass(frozen=True)
class _Plan:
    """A successful answer, independent of the protocol it is rendered in."""

    model: str
    pieces: list[str]
    calls: list[_Call]
    delay: float
    prompt_tokens: int
    completion_tokens: int
    # Set when the answer was cut at the request's limit ("length").
    finish: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def finish_reason(self) -> str:
        if self.finish is not None:
            return self.finish
        return "tool_calls" if self.calls else "stop"


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


class _OllamaWire:
    """Renders plans and errors in Ollama's /api/chat format (NDJSON when streaming)."""

    stream_content_type = "application/x-ndjson"

    def error(self, status: int, body: str | dict[str, Any]) -> dict[str, Any]:
        return body if isinstance(body, dict) else {"error": body}

    def _line(self, plan: _Plan, message: dict[str, Any], done: bool) -> dict[str, Any]:
        return {
            "model": plan.model,
            "created_at": _now_iso(),
            "message": {"role": "assistant", **message},
            "done": done,
        }

    def _done_fields(self, plan: _Plan) -> dict[str, Any]:
        return {
            "done_reason": plan.finish or "stop",
            "total_duration": 1_000_000,
            "load_duration": 1_000,
            "prompt_eval_count": plan.prompt_tokens,
            "prompt_eval_duration": 1_000,
            "eval_count": plan.completion_tokens,
            "eval_duration": 1_000,
        }

    def _tool_calls(self, plan: _Plan) -> list[dict[str, Any]]:
        return [{"function": {"name": c.name, "arguments": c.arguments}} for c in plan.calls]

    def content_frame(self, plan: _Plan, piece: str, first: bool) -> bytes:
        return _dumps(self._line(plan, {"content": piece}, done=False)) + b"\n"

    def raw_frame(self, text: str) -> bytes:
        return text.encode("utf-8") + b"\n"

    def tail_frames(self, plan: _Plan, include_usage: bool) -> list[bytes]:
        frames: list[bytes] = []
        if plan.calls:
            message = {"content": "", "tool_calls": self._tool_calls(plan)}
            frames.append(_dumps(self._line(plan, message, done=False)) + b"\n")
        final = self._line(plan, {"content": ""}, done=True) | self._done_fields(plan)
        frames.append(_dumps(final) + b"\n")
        return frames

    def whole(self, plan: _Plan) -> dict[str, Any]:
        message: dict[str, Any] = {"content": plan.text}
        if plan.calls:
            message["tool_calls"] = self._tool_calls(plan)
        return self._line(plan, message, done=True) | self._done_fields(plan)


_OPENAI_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


class _OpenAIWire:
    """Renders plans and errors in the OpenAI chat-completions format (SSE when streaming)."""

    stream_content_type = "text/event-stream"

    def __init__(self, completion_id: str) -> None:
        self._id = completion_id
        self._created = int(time.time())

    def error(self, status: int, body: str | dict[str, Any]) -> dict[str, Any]:
        if isinstance(body, dict):
            return body
        kind = _OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
        return {"error": {"message": body, "type": kind, "param": None, "code": str(status)}}

    def _usage(self, plan: _Plan) -> dict[str, int]:
        return {
            "prompt_tokens": plan.prompt_tokens,
            "completion_tokens": plan.completion_tokens,
            "total_tokens": plan.prompt_tokens + plan.completion_tokens,
        }

    def _chunk(self, plan: _Plan, choices: list[dict[str, Any]]) -> bytes:
        chunk = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": plan.model,
            "choices": choices,
        }
        return b"data: " + _dumps(chunk) + b"\n\n"

    def _delta(self, plan: _Plan, delta: dict[str, Any], finish: str | None = None) -> bytes:
        return self._chunk(plan, [{"index": 0, "delta": delta, "finish_reason": finish}])

    def raw_frame(self, text: str) -> bytes:
        return b"data: " + text.encode("utf-8") + b"\n\n"

    def content_frame(self, plan: _Plan, piece: str, first: bool) -> bytes:
        delta: dict[str, Any] = {"role": "assistant"} if first else {}
        delta["content"] = piece
        return self._delta(plan, delta)

    def tail_frames(self, plan: _Plan, include_usage: bool) -> list[bytes]:
        frames: list[bytes] = []
        for index, call in enumerate(plan.calls):
            head: dict[str, Any] = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            delta: dict[str, Any] = {"tool_calls": [head]}
            if index == 0 and not plan.pieces:
                delta = {"role": "assistant", "content": None} | delta
            frames.append(self._delta(plan, delta))
            args = call.arguments_json
            half = len(args) // 2
            for part in (args[:half], args[half:]):
                part_delta = {"index": index, "function": {"arguments": part}}
                frames.append(self._delta(plan, {"tool_calls": [part_delta]}))
        frames.append(self._delta(plan, {}, plan.finish_reason))
        if include_usage:
            usage_chunk = json.loads(self._chunk(plan, [])[len(b"data: ") :])
            usage_chunk["usage"] = self._usage(plan)
            frames.append(b"data: " + _dumps(usage_chunk) + b"\n\n")
        frames.append(b"data: [DONE]\n\n")
        return frames

    def whole(self, plan: _Plan) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": plan.text or None}
        if plan.calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_json},
                }
                for c in plan.calls
            ]
        elif message["content"] is None:
            message["content"] = ""
        return {
            "id": self._id,
            "object": "chat.completion",
            "created": self._created,
            "model": plan.model,
            "choices": [{"index": 0, "message": message, "finish_reason": plan.finish_reason}],
            "usage": self._usage(plan),
        }


_Wire = _OllamaWire | _OpenAIWire


def _json_response(
    status: int, payload: Any, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.Response(
        status=status,
        body=_dumps(payload),
        content_type="application/json",
        headers=dict(headers or {}),
    )


# --------------------------------------------------------------------------- the server


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class FakeLLMServer:
    """aiohttp server on 127.0.0.1:0 answering chat requests from a script of replies."""

    def __init__(
        self,
        *,
        models: Sequence[str] = ("qwen3:8b",),
        embedder: Callable[[str], list[float]] = hashing_embedder,
        context_length: int = 32768,
        shutdown_timeout: float = 2.0,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.models: list[str] = list(models)
        self.embedder: Callable[[str], list[float]] = embedder
        self.embed_error: HttpError | None = None
        self.default_reply: ScriptItem | None = None
        self.context_length = context_length
        self.capabilities: dict[str, list[str]] = {}
        # When set, every request must carry `Authorization: Bearer <required_key>` (else 401).
        self.required_key: str | None = None
        # False: the OpenAI-compatible stream never carries usage counts (some servers send
        # none even when asked).
        self.sends_usage = True
        self.requests: list[RecordedRequest] = []
        # Chat requests whose client closed the connection before the answer ended.
        self.client_closed: list[RecordedRequest] = []
        # When each streamed answer's last frame was written (time.monotonic), in order.
        self.streams_ended: list[float] = []
        self._queue: deque[ScriptItem] = deque()
        self._call_counter = 0
        self._completion_counter = 0
        self._shutdown_timeout = shutdown_timeout
        # Serve HTTPS with this server-side context (the URLs say https then).
        self._tls = tls
        self._runner: web.AppRunner | None = None
        self._port: int | None = None
        self._closing = asyncio.Event()
        self._pausing: set[asyncio.Future[None]] = set()
        self._arrived = asyncio.Condition()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bind 127.0.0.1 on a free port and start serving."""
        if self._runner is not None:
            raise RuntimeError("FakeLLMServer already started")
        self._closing = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024, middlewares=[self._check_key])
        app.router.add_post(OLLAMA_CHAT, self._chat)
        app.router.add_post(OPENAI_CHAT, self._chat)
        app.router.add_post("/api/embed", self._ollama_embed)
        app.router.add_post("/api/embeddings", self._ollama_embed_legacy)
        app.router.add_post("/v1/embeddings", self._openai_embed)
        app.router.add_get("/api/tags", self._ollama_tags)
        app.router.add_get("/v1/models", self._openai_models)
        app.router.add_get("/api/version", self._ollama_version)
        app.router.add_post("/api/show", self._ollama_show)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=self._shutdown_timeout)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self._tls)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        log.debug("FakeLLMServer listening on %s", self.url)

    async def close(self) -> None:
        """Stop serving; pending Hang/delayed replies are cut off, never waited for."""
        self._closing.set()
        for waiter in self._pausing:
            _wake(waiter)
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> FakeLLMServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ public surface

    @property
    def port(self) -> int:
        """The bound TCP port."""
        if self._port is None:
            raise RuntimeError("FakeLLMServer is not started")
        return self._port

    @property
    def url(self) -> str:
        """Base URL ("http://127.0.0.1:PORT", https with `tls`); the ollama client's host."""
        scheme = "https" if self._tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    @property
    def openai_base(self) -> str:
        """OpenAI-compatible base URL ("http://127.0.0.1:PORT/v1"); LiteLLM's api_base."""
        return f"{self.url}/v1"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Only /api/chat and /v1/chat/completions requests, in arrival order."""
        return [r for r in self.requests if r.is_chat]

    @property
    def pending(self) -> int:
        """How many scripted replies have not been consumed yet."""
        return len(self._queue)

    def script(self, *replies: ScriptItem) -> None:
        """Queue replies (or functions of the request returning one), one per chat request."""
        for reply in replies:
            if not isinstance(reply, _REPLY_TYPES) and not callable(reply):
                raise TypeError(f"FakeLLMServer.script: not a reply or a callable: {reply!r}")
        self._queue.extend(replies)

    async def wait_for_requests(
        self, count: int, *, chat_only: bool = True, timeout: float = 5.0
    ) -> list[RecordedRequest]:
        """Wait until at least `count` (chat) requests have arrived; TimeoutError otherwise."""

        def seen() -> list[RecordedRequest]:
            return self.chat_requests if chat_only else list(self.requests)

        async with self._arrived:
            await asyncio.wait_for(self._arrived.wait_for(lambda: len(seen()) >= count), timeout)
        return seen()

    async def wait_for_client_close(self, count: int = 1, *, timeout: float = 5.0) -> None:
        """Wait until `count` clients have closed a connection mid-answer; TimeoutError else."""
        async with self._arrived:
            await asyncio.wait_for(
                self._arrived.wait_for(lambda: len(self.client_closed) >= count), timeout
            )

    # ------------------------------------------------------------------ plumbing

    async def _client_went_away(self, recorded: RecordedRequest) -> None:
        self.client_closed.append(recorded)
        async with self._arrived:
            self._arrived.notify_all()

    async def _record(self, request: web.Request) -> RecordedRequest:
        body = await request.read()
        parsed: Any = None
        if body:
            with contextlib.suppress(ValueError):
                parsed = json.loads(body)
        recorded = RecordedRequest(
            method=request.method,
            path=request.path,
            json=parsed,
            headers=CIMultiDictProxy(CIMultiDict(request.headers)),
            body=body,
            query=dict(request.query),
        )
        self.requests.append(recorded)
        async with self._arrived:
            self._arrived.notify_all()
        return recorded

    async def _pause(self, seconds: float) -> bool:
        """Wait `seconds` (the fake model's speed); False if the server started closing."""
        if seconds > 0 and not self._closing.is_set():
            # A future and a timer, not wait_for's task per call: a benchmark streams thousands
            # of pieces at once from this process, on the cores the bot it measures runs on.
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()
            timer = loop.call_later(seconds, _wake, waiter)
            self._pausing.add(waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._pausing.discard(waiter)
        return not self._closing.is_set()

    @staticmethod
    def _abort(request: web.Request) -> None:
        transport = request.transport
        if transport is not None:
            transport.abort()

    async def _reply_when_due(self, recorded: RecordedRequest) -> Reply | str:
        """The next reply, once the event a `Text(after=...)` waits for is set."""
        reply = self._next_reply(recorded)
        if isinstance(reply, Text) and reply.after is not None:
            await reply.after.wait()
        return reply

    def _next_reply(self, recorded: RecordedRequest) -> Reply | str:
        """The reply for this chat request, or an error message for a 500."""
        if self._queue:
            item: ScriptItem = self._queue.popleft()
        elif self.default_reply is not None:
            item = self.default_reply
        else:
            return NO_REPLY_MESSAGE
        if isinstance(item, _REPLY_TYPES):
            return item
        try:
            reply: object = item(recorded)
        except Exception as exc:
            log.exception("FakeLLMServer: reply function failed")
            return f"FakeLLMServer: reply function raised {exc!r}"
        if not isinstance(reply, _REPLY_TYPES):
            return f"FakeLLMServer: reply function returned {reply!r}, not a reply"
        return reply

    def _plan(self, reply: Text | ToolCalls | BadToolArguments, model: str) -> _Plan:
        if isinstance(reply, BadToolArguments):
            self._call_counter += 1
            call = _Call(f"call_{self._call_counter}", reply.name, reply.arguments)
            return _Plan(model, [], [call], 0.0, 10, 1)
        if isinstance(reply, Text):
            completion = reply.completion_tokens
            if completion is None:
                completion = max(1, _count_tokens(reply.text))
            return _Plan(model, reply.pieces, [], reply.delay, reply.prompt_tokens, completion)
        calls: list[_Call] = []
        for i, (name, args) in enumerate(reply.calls):
            if reply.ids is not None:
                call_id = reply.ids[i]
            else:
                self._call_counter += 1
                call_id = f"call_{self._call_counter}"
            calls.append(_Call(call_id, name, args))
        completion = reply.completion_tokens
        if completion is None:
            completion = _count_tokens(reply.text) + sum(
                _count_tokens(c.arguments_json) + 1 for c in calls
            )
        pieces = _word_pieces(reply.text) if reply.text else []
        return _Plan(model, pieces, calls, 0.0, reply.prompt_tokens, completion)

    # ------------------------------------------------------------------ chat

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        wire: _Wire
        if recorded.protocol == "ollama":
            wire = _OllamaWire()
        else:
            self._completion_counter += 1
            wire = _OpenAIWire(f"chatcmpl-fake{self._completion_counter}")
        body = recorded.json
        if not isinstance(body, dict):
            return _json_response(400, wire.error(400, "FakeLLMServer: body is not a JSON object"))
        if not isinstance(body.get("messages"), list):
            return _json_response(400, wire.error(400, "FakeLLMServer: 'messages' must be a list"))

        reply = await self._reply_when_due(recorded)
        if isinstance(reply, str):
            return _json_response(500, {"error": reply})
        if isinstance(reply, HttpError):
            return _json_response(reply.status, wire.error(reply.status, reply.body), reply.headers)

        if isinstance(reply, Raw):
            headers = {"Content-Type": reply.content_type}
            return web.Response(status=reply.status, body=reply.data, headers=headers)

        model = recorded.model or "fake-model"
        streaming = recorded.stream
        if isinstance(reply, Drop | Hang):
            return await self._cut_off(request, wire, reply, model, streaming)
        if isinstance(reply, Endless):
            return await self._endless(request, recorded, wire, reply, model, streaming)
        if isinstance(reply, InvalidJson):
            return await self._invalid_json(request, wire, reply, model, streaming)
        plan = self._plan(reply, model)
        if not streaming:
            if not await self._pause(plan.delay * max(0, len(plan.pieces) - 1)):
                self._abort(request)
                return web.Response()
            return _json_response(200, wire.whole(plan))
        options = body.get("stream_options")
        include_usage = self.sends_usage and _wants_usage(options)
        return await self._stream(request, recorded, wire, plan, include_usage)

    async def _stream(
        self,
        request: web.Request,
        recorded: RecordedRequest,
        wire: _Wire,
        plan: _Plan,
        include_usage: bool,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": wire.stream_content_type})
        try:
            await response.prepare(request)
            for i, piece in enumerate(plan.pieces):
                if i and not await self._pause(plan.delay):
                    self._abort(request)
                    return response
                await response.write(wire.content_frame(plan, piece, first=i == 0))
            for frame in wire.tail_frames(plan, include_usage):
                await response.write(frame)
            self.streams_ended.append(time.monotonic())
            await response.write_eof()
        except ConnectionError:
            log.debug("FakeLLMServer: client went away mid-stream")
            await self._client_went_away(recorded)
        return response

    async def _endless(
        self,
        request: web.Request,
        recorded: RecordedRequest,
        wire: _Wire,
        reply: Endless,
        model: str,
        streaming: bool,
    ) -> web.StreamResponse:
        """Stream `reply.piece` until the client goes away (recorded) or the server closes."""
        response = web.StreamResponse(headers={"Content-Type": wire.stream_content_type})
        plan = _Plan(model, reply.pieces, [], reply.interval, 0, 0)
        try:
            if not streaming:
                await self._closing.wait()
                self._abort(request)
                return response
            await response.prepare(request)
            limit = recorded.answer_limit
            said = 0
            for i, piece in enumerate(reply.stream()):
                if limit is not None and said + _count_tokens(piece) > limit:
                    return await self._end_at_limit(request, response, wire, plan, said)
                said += _count_tokens(piece)
                await response.write(wire.content_frame(plan, piece, first=i == 0))
                if not await self._pause(reply.interval):
                    self._abort(request)
                    return response
                if reply.interval <= 0:
                    await asyncio.sleep(0)  # let the client (same loop) read and close
        except (ConnectionError, asyncio.CancelledError):
            log.debug("FakeLLMServer: client closed the endless stream")
            await self._client_went_away(recorded)
        return response

    async def _end_at_limit(
        self,
        request: web.Request,
        response: web.StreamResponse,
        wire: _Wire,
        plan: _Plan,
        said: int,
    ) -> web.StreamResponse:
        """End an endless answer at the request's token limit, as a server does."""
        body = await request.json()
        prompt = _count_tokens(json.dumps(body.get("messages"), ensure_ascii=False))
        ended = replace(plan, prompt_tokens=prompt, completion_tokens=said, finish="length")
        options = body.get("stream_options")
        include_usage = self.sends_usage and _wants_usage(options)
        for frame in wire.tail_frames(ended, include_usage):
            await response.write(frame)
        self.streams_ended.append(time.monotonic())
        await response.write_eof()
        return response

    async def _invalid_json(
        self, request: web.Request, wire: _Wire, reply: InvalidJson, model: str, streaming: bool
    ) -> web.StreamResponse:
        """Well-formed pieces, then a frame that is not JSON, then the end of the body."""
        if not streaming:
            return web.Response(
                status=200, body=reply.line.encode("utf-8"), content_type="application/json"
            )
        response = web.StreamResponse(headers={"Content-Type": wire.stream_content_type})
        plan = _Plan(model, reply.pieces, [], 0.0, 0, 0)
        try:
            await response.prepare(request)
            for i, piece in enumerate(reply.pieces):
                await response.write(wire.content_frame(plan, piece, first=i == 0))
            await response.write(wire.raw_frame(reply.line))
            await response.write_eof()
        except ConnectionError:
            log.debug("FakeLLMServer: client went away before the bad frame")
        return response

    async def _cut_off(
        self, request: web.Request, wire: _Wire, reply: Drop | Hang, model: str, streaming: bool
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": wire.stream_content_type})
        pieces = reply.pieces if streaming else []
        try:
            if pieces:
                plan = _Plan(model, pieces, [], 0.0, 0, 0)
                await response.prepare(request)
                for i, piece in enumerate(pieces):
                    await response.write(wire.content_frame(plan, piece, first=i == 0))
                if isinstance(reply, Drop) and reply.after_final:
                    for frame in wire.tail_frames(plan, False):
                        await response.write(frame)
            if isinstance(reply, Hang):
                await self._closing.wait()
        except ConnectionError:
            log.debug("FakeLLMServer: client went away before the cut-off")
        self._abort(request)
        return response

    # ------------------------------------------------------------------ embeddings

    def _embed_inputs(self, body: Any, key: str) -> list[str] | None:
        value = body.get(key) if isinstance(body, dict) else None
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return list(value)
        return None

    async def _ollama_embed(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        wire = _OllamaWire()
        if self.embed_error is not None:
            err = self.embed_error
            return _json_response(err.status, wire.error(err.status, err.body), err.headers)
        inputs = self._embed_inputs(recorded.json, "input")
        if inputs is None:
            return _json_response(400, wire.error(400, "FakeLLMServer: 'input' must be str|[str]"))
        return _json_response(
            200,
            {
                "model": recorded.model or "fake-embed",
                "embeddings": [self.embedder(text) for text in inputs],
                "total_duration": 1_000,
                "load_duration": 1_000,
                "prompt_eval_count": sum(_count_tokens(t) for t in inputs),
            },
        )

    async def _ollama_embed_legacy(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        wire = _OllamaWire()
        if self.embed_error is not None:
            err = self.embed_error
            return _json_response(err.status, wire.error(err.status, err.body), err.headers)
        inputs = self._embed_inputs(recorded.json, "prompt")
        if inputs is None or len(inputs) != 1:
            return _json_response(400, wire.error(400, "FakeLLMServer: 'prompt' must be a str"))
        return _json_response(200, {"embedding": self.embedder(inputs[0])})

    async def _openai_embed(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        wire = _OpenAIWire("embd-fake")
        if self.embed_error is not None:
            err = self.embed_error
            return _json_response(err.status, wire.error(err.status, err.body), err.headers)
        inputs = self._embed_inputs(recorded.json, "input")
        if inputs is None:
            return _json_response(400, wire.error(400, "FakeLLMServer: 'input' must be str|[str]"))
        as_base64 = (
            isinstance(recorded.json, dict) and recorded.json.get("encoding_format") == "base64"
        )
        data: list[dict[str, Any]] = []
        for index, text in enumerate(inputs):
            vector = self.embedder(text)
            embedding: list[float] | str = vector
            if as_base64:
                packed = struct.pack(f"<{len(vector)}f", *vector)
                embedding = base64.b64encode(packed).decode("ascii")
            data.append({"object": "embedding", "embedding": embedding, "index": index})
        tokens = sum(_count_tokens(t) for t in inputs)
        return _json_response(
            200,
            {
                "object": "list",
                "data": data,
                "model": recorded.model or "fake-embed",
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    # ------------------------------------------------------------------ model listings

    def _model_entry(self, name: str) -> dict[str, Any]:
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
        return {
            "name": name,
            "model": name,
            "modified_at": "2025-01-01T00:00:00Z",
            "size": 4_000_000_000,
            "digest": digest,
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "llama",
                "families": ["llama"],
                "parameter_size": "8B",
                "quantization_level": "Q4_K_M",
            },
        }

    async def _ollama_tags(self, request: web.Request) -> web.Response:
        await self._record(request)
        return _json_response(200, {"models": [self._model_entry(m) for m in self.models]})

    async def _openai_models(self, request: web.Request) -> web.Response:
        await self._record(request)
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models]
        return _json_response(200, {"object": "list", "data": data})

    async def _ollama_version(self, request: web.Request) -> web.Response:
        await self._record(request)
        return _json_response(200, {"version": "0.9.0"})

    async def _ollama_show(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        body = recorded.json if isinstance(recorded.json, dict) else {}
        name = body.get("model") or body.get("name")
        if not isinstance(name, str) or name not in self.models:
            return _json_response(404, {"error": f"model '{name}' not found"})
        entry = self._model_entry(name)
        return _json_response(
            200,
            {
                "modelfile": f"FROM {name}",
                "parameters": "",
                "template": "{{ .Prompt }}",
                "details": entry["details"],
                "model_info": {
                    "general.architecture": "llama",
                    "llama.context_length": self.context_length,
                },
                "capabilities": self.capabilities.get(name, ["completion", "tools"]),
                "modified_at": entry["modified_at"],
            },
        )

    @web.middleware
    async def _check_key(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if self.required_key is None:
            return await handler(request)
        if request.headers.get("Authorization") != f"Bearer {self.required_key}":
            await self._record(request)
            error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
            return _json_response(401, {"error": error})
        return await handler(request)

    async def _unknown(self, request: web.Request) -> web.Response:
        await self._record(request)
        message = f"FakeLLMServer: no route for {request.method} {request.path}"
        return _json_response(404, {"error": message})
