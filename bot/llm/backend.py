"""The interface both LLM backends implement, and the one classification of their errors."""

from __future__ import annotations

import email.utils
import re
import socket
import ssl
import time
from collections.abc import AsyncGenerator, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from bot.llm.types import Completion, Embeddings, Message, StreamDelta, ToolSchema

# How much of a reply that is not the protocol is quoted in the error.
QUOTE_CHARS = 60
# How much of a server's own error text is quoted in a sentence.
SERVER_TEXT_CHARS = 300


class ModelErrorKind(StrEnum):
    """Why a model call failed; decides whether it is retried and what the sentence says."""

    UNREACHABLE = "unreachable"  # no connection was made (refused, name unknown, no route)
    TIMEOUT = "timeout"  # connected, but no answer within LLM_TIMEOUT
    AUTHENTICATION = "authentication"  # 401/403, or no key where the provider needs one
    MODEL_MISSING = "model_missing"  # the server does not have the configured model
    RATE_LIMITED = "rate_limited"  # 429
    CONTEXT_TOO_LONG = "context_too_long"  # the prompt exceeds the model's window
    BAD_REQUEST = "bad_request"  # any other 4xx
    SERVER_ERROR = "server_error"  # 5xx, or the connection dropped before the answer
    PROTOCOL = "protocol"  # the server answered, but not in the model's protocol
    INTERRUPTED = "interrupted"  # the answer had begun, then broke off (already billed)
    INTERNAL = "internal"  # the client library failed on our side of the wire


# Retrying may help only these. TIMEOUT is not among them: the call already waited LLM_TIMEOUT
# (120 s by default) and a retry would multiply that wait for a model that is too slow.
TRANSIENT_KINDS = frozenset(
    {ModelErrorKind.UNREACHABLE, ModelErrorKind.RATE_LIMITED, ModelErrorKind.SERVER_ERROR}
)

# What the person chatting reads: no addresses, no settings.
SHORT = {
    ModelErrorKind.UNREACHABLE: "The language model is not reachable right now.",
    ModelErrorKind.TIMEOUT: "The language model did not answer in time.",
    ModelErrorKind.AUTHENTICATION: "The language model service refused the bot's credentials.",
    ModelErrorKind.MODEL_MISSING: "The configured language model is not available.",
    ModelErrorKind.RATE_LIMITED: "The language model is rate limited; try again in a moment.",
    ModelErrorKind.CONTEXT_TOO_LONG: "The conversation is too long for the language model.",
    ModelErrorKind.BAD_REQUEST: "The language model service rejected the request.",
    ModelErrorKind.SERVER_ERROR: "The language model service had an error; try again later.",
    ModelErrorKind.PROTOCOL: "The language model sent a reply that could not be read.",
    ModelErrorKind.INTERRUPTED: "The language model's answer broke off.",
    ModelErrorKind.INTERNAL: "The language model call failed unexpectedly.",
}

# An AUTHENTICATION failure with no key set: nothing was refused, a key is missing.
NEEDS_KEY = "The language model service needs an API key, and the bot has none set."

# How servers say that the prompt does not fit (OpenAI's code, vLLM, llama.cpp, Ollama…).
_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "context size",
    "exceeds the context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
)
# A 404 that is about the model, not the path (Ollama: 'model "x" not found'; OpenAI).
_MODEL_MARKERS = ("model_not_found", "model")
# Texts of a client refusing to send a request without a key (openai, LiteLLM's providers).
_NO_KEY_MARKERS = ("missing credentials", "api key", "api_key", "no key")
_NOT_RESOLVED = ("name or service not known", "nodename nor servname", "name resolution")


class BackendError(Exception):
    """A backend call failed; `kind` says why, and whether retrying may help (`transient`).

    The message is one sentence naming the cause and the setting to change, for the operator
    (logs, api_logs, admin page); `short` is its form for the person chatting.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ModelErrorKind,
        status: int | None = None,
        short: str | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.short = short or SHORT[kind]
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Whether the same call may succeed when sent again."""
        return self.kind in TRANSIENT_KINDS


@dataclass(frozen=True)
class Target:
    """Where a call went, in the terms of the settings that chose it (for the sentences)."""

    model: str
    base: str | None  # the server's address (LLM_API_BASE); None: the provider's own
    ollama: bool = False
    embedding: bool = False
    context_tokens: int | None = None
    has_key: bool = True

    @property
    def model_setting(self) -> str:
        """The variable that names this model."""
        return "EMBED_MODEL" if self.embedding else "LLM_MODEL"

    @property
    def name(self) -> str:
        """The model's name as the server knows it (without the ollama/ prefix)."""
        return self.model.removeprefix("ollama/") if self.ollama else self.model

    @property
    def where(self) -> str:
        """'the model server at <address>', or the provider's API when no address is set."""
        if self.base:
            return f"the model server at {self.base}"
        provider = self.model.partition("/")[0] if "/" in self.model else ""
        return f"the {provider} API" if provider else "the model provider"

    @property
    def subject(self) -> str:
        """`where` at the start of a sentence."""
        return self.where[0].upper() + self.where[1:]


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


def connection_failure(exc: BaseException) -> str | None:
    """Why no connection was made, when that is what `exc` shows ('connection refused'…)."""
    for current in causes(exc):
        if isinstance(current, ssl.SSLCertVerificationError):
            return "its TLS certificate is not trusted; SSL_CERT_FILE can name its CA"
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, socket.gaierror) or any(
            marker in str(current).lower() for marker in _NOT_RESOLVED
        ):
            return "the host name does not resolve"
    for current in causes(exc):
        name = type(current).__name__
        if name in ("ConnectError", "ClientConnectorError", "ConnectTimeout") or (
            isinstance(current, OSError)
            and not isinstance(current, TimeoutError)
            and "connect" in str(current).lower()
        ):
            return "no connection could be made"
    return None


def retry_after(exc: BaseException, *, now: float | None = None) -> float | None:
    """Seconds the server asked to wait (Retry-After) on a response somewhere in `exc`."""
    for current in causes(exc):
        for headers in (
            getattr(getattr(current, "response", None), "headers", None),
            getattr(current, "litellm_response_headers", None),
            getattr(current, "headers", None),
        ):
            value = _header(headers, "retry-after")
            if value is not None:
                return parse_retry_after(value, now=now)
    return None


def _header(headers: object, name: str) -> str | None:
    if not isinstance(headers, Mapping) and not hasattr(headers, "get"):
        return None
    try:
        value: Any = headers.get(name)
    except Exception:
        return None
    return value if isinstance(value, str) else None


def parse_retry_after(value: str, *, now: float | None = None) -> float | None:
    """A Retry-After header (seconds, or an HTTP date) as seconds from now; None if unreadable."""
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def server_text(text: str) -> str:
    """A server's error text as quoted in a sentence: one line, bounded."""
    flat = " ".join(text.split())
    if len(flat) > SERVER_TEXT_CHARS:
        flat = flat[: SERVER_TEXT_CHARS - 1] + "…"
    return flat


def kind_for_status(status: int, text: str) -> ModelErrorKind:
    """The kind of an HTTP error answer (`status` -1: an error line inside Ollama's stream)."""
    lowered = text.lower()
    if status in (401, 403):
        return ModelErrorKind.AUTHENTICATION
    if status == 429:
        return ModelErrorKind.RATE_LIMITED
    if (status == -1 or 400 <= status < 500) and any(m in lowered for m in _CONTEXT_MARKERS):
        return ModelErrorKind.CONTEXT_TOO_LONG
    if status == 404 and any(marker in lowered for marker in _MODEL_MARKERS):
        return ModelErrorKind.MODEL_MISSING
    if status == -1 or status >= 500:
        return ModelErrorKind.SERVER_ERROR
    return ModelErrorKind.BAD_REQUEST


def http_error(
    status: int, text: str, target: Target, *, wait: float | None = None
) -> BackendError:
    """The error for an HTTP error answer, its sentence naming the setting to change."""
    kind = kind_for_status(status, text)
    quoted = server_text(text)
    code = f"HTTP {status}" if status > 0 else "an error in its answer"
    short: str | None = None
    if kind is ModelErrorKind.AUTHENTICATION:
        if target.has_key:
            message = (
                f"{target.subject} rejected the API key ({code}); set LLM_API_KEY to a key it "
                "accepts."
            )
        else:
            message = f"{target.subject} requires an API key ({code}); set LLM_API_KEY."
            short = NEEDS_KEY
    elif kind is ModelErrorKind.MODEL_MISSING:
        message = model_missing_sentence(target, code)
    elif kind is ModelErrorKind.RATE_LIMITED:
        after = "" if wait is None else f"; it asks to wait {wait:g} s"
        message = f"{target.subject} is rate limiting requests for {target.name} ({code}{after})."
    elif kind is ModelErrorKind.CONTEXT_TOO_LONG:
        message = context_sentence(target, f"{code}: {quoted}")
    elif kind is ModelErrorKind.BAD_REQUEST:
        message = f"{target.subject} rejected the request for {target.name} ({code}): {quoted}"
        if status == 404:
            hint = "" if target.ollama else " (an OpenAI-compatible address usually ends in /v1)"
            message += f"; check LLM_API_BASE{hint}."
    else:
        message = f"{target.subject} failed ({code}): {quoted}"
    return BackendError(
        message,
        kind=kind,
        status=status if status > 0 else None,
        short=short,
        retry_after=wait,
    )


def model_missing_sentence(target: Target, code: str) -> str:
    """The model is not on the server: name the variable, and for Ollama how to pull it."""
    if target.ollama:
        return (
            f"The model {target.name!r} is not available on Ollama at {target.base}; pull it with "
            f"`ollama pull {target.name}` or set {target.model_setting} to a model it has."
        )
    return (
        f"The model {target.name!r} is not available on {target.where} ({code}); set "
        f"{target.model_setting} to a model it offers."
    )


def context_sentence(target: Target, detail: str) -> str:
    """The prompt did not fit the model's window: name LLM_CONTEXT_TOKENS."""
    if target.embedding:
        return (
            f"A text to embed is longer than {target.name}'s context window ({detail}); "
            "smaller knowledge files or another EMBED_MODEL help."
        )
    now = f" (now {target.context_tokens})" if target.context_tokens else ""
    return (
        f"The prompt is longer than {target.name}'s context window ({detail}); set "
        f"LLM_CONTEXT_TOKENS{now} to at most the window the model really has."
    )


def unreachable(target: Target, reason: str) -> BackendError:
    """No connection to the server: name its address and LLM_API_BASE."""
    if target.base:
        # The readiness check (bot/ops/probes.py) says the same sentence.
        start = "start Ollama" if target.ollama else "start it"
        message = (
            f"The model server at {target.base} is not reachable ({reason}); {start} or set "
            "LLM_API_BASE."
        )
    else:
        message = (
            f"{target.subject} is not reachable ({reason}); check the network, or set LLM_API_BASE."
        )
    return BackendError(message, kind=ModelErrorKind.UNREACHABLE)


def timed_out(target: Target, seconds: float) -> BackendError:
    """Connected, but no answer in time: name LLM_TIMEOUT."""
    return BackendError(
        f"{target.subject} did not answer {target.name} within {seconds:g} s; a larger "
        "LLM_TIMEOUT or a faster model helps.",
        kind=ModelErrorKind.TIMEOUT,
    )


def no_api_key(target: Target) -> BackendError:
    """The client refused to send a request without a key (nothing reached the server)."""
    return BackendError(
        f"{target.name} needs an API key and none is set; set LLM_API_KEY.",
        kind=ModelErrorKind.AUTHENTICATION,
        short=NEEDS_KEY,
    )


def mentions_missing_key(exc: BaseException) -> bool:
    """Whether `exc` is a client saying it has no API key to send."""
    return any(
        marker in str(current).lower() for current in causes(exc) for marker in _NO_KEY_MARKERS
    )


def dropped(target: Target, exc: BaseException) -> BackendError:
    """The connection broke before an answer came: a server-side failure, worth a retry."""
    return BackendError(
        f"{target.subject} closed the connection before {target.name} answered "
        f"({type(root_cause(exc)).__name__}).",
        kind=ModelErrorKind.SERVER_ERROR,
    )


def interrupted(target: Target, exc: BaseException) -> BackendError:
    """The answer had begun and broke off: not sent again (it was already billed)."""
    return BackendError(
        f"The answer of {target.name} from {target.where} broke off "
        f"({type(root_cause(exc)).__name__}).",
        kind=ModelErrorKind.INTERRUPTED,
    )


def internal(what: str) -> BackendError:
    """The client library failed on our side of the wire (a bug, not the server)."""
    return BackendError(what[:500], kind=ModelErrorKind.INTERNAL)


def protocol_error(
    where: str,
    protocol: str,
    detail: str,
    *,
    wrong_address: bool = True,
    status: int | None = None,
) -> BackendError:
    """The server answered, but not in the model's protocol (an HTML page, broken JSON…).

    `wrong_address` (the usual cause) adds that LLM_API_BASE probably names the wrong server;
    without it the server speaks the protocol but sent one malformed part (a tool call).
    """
    if wrong_address:
        hint = "LLM_API_BASE probably points at the wrong thing"
        short = (
            f"The language model server answered with something that is not the {protocol} "
            "protocol; check LLM_API_BASE."
        )
    else:
        hint = "the model or the server produced a malformed reply"
        short = f"The language model sent a malformed reply ({detail})."
    return BackendError(
        f"The server at {where} answered with something that is not the {protocol} "
        f"protocol ({detail}); {hint}.",
        kind=ModelErrorKind.PROTOCOL,
        status=status,
        short=short,
    )


_HTML = re.compile(r"<html|<!doctype html", re.IGNORECASE)


def describe_not_json(text: str) -> str:
    """What a reply that should have been JSON was instead (an HTML page, some text…)."""
    head = text.lstrip()[:200]
    if _HTML.search(head):
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
        *,
        max_tokens: int | None = None,
    ) -> AsyncGenerator[StreamDelta, None]:
        """Stream the answer (at most `max_tokens`); the last delta has done=True, tool calls
        and usage."""
        ...

    async def complete(
        self,
        model: str,
        messages: list[Message],
        context_tokens: int,
        *,
        max_tokens: int | None = None,
    ) -> Completion:
        """The whole answer at once (at most `max_tokens`), without tools."""
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
