"""One interface to the language model: stream / complete / embed, logged and retried."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from bot.config import Settings, is_ollama_model
from bot.errors import LLMError, LLMUnavailableError
from bot.llm.answer_limits import answer_limit
from bot.llm.backend import BackendError, ChatBackend, ModelErrorKind, internal
from bot.llm.token_factors import Calibration, TokenCalibrator
from bot.llm.tokens import prompt_tokens, tool_tokens
from bot.llm.tool_sets import PerToolSet
from bot.llm.types import Completion, Embeddings, Message, StreamDelta, ToolSchema, Usage
from bot.llm.usage_estimate import PromptShape, counted_usage
from bot.store.engine.connection import utcnow
from bot.store.repos.api_logs import ApiLogRepository
from bot.store.repos.token_factors import TokenFactorRepository
from bot.utils.durations import elapsed_ms, loop_now
from bot.utils.log_setup import adopt_litellm_logging, wants_library_debug
from bot.utils.redact import Redactor

log = logging.getLogger(__name__)

OLLAMA_DEFAULT_BASE = "http://localhost:11434"
DEFAULT_OLLAMA_EMBED_MODEL = "ollama/nomic-embed-text"
# How much of each embedded text an api_logs row keeps (the vectors are not logged at all).
EMBED_LOG_CHARS = 200
# The api_logs error of a streamed call its caller stopped (a turn's bound) or that was cancelled.
STOPPED_BY_CALLER = (
    "Stopped by the caller before the model finished (a turn's length or repetition bound)."
)
CANCELLED = "Cancelled before the model finished (a turn's time bound, or shutdown)."
# The api_logs error of a call cancelled because the member wrote again before its answer showed:
# the turn restarted with their messages (bot/chat/bursts.py cancels the task with this text).
SUPERSEDED = "Superseded: the member wrote again before the answer showed; the turn restarted."


Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently transient failures are retried."""

    attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 4.0
    # A server's Retry-After is honoured up to this; asked to wait longer, the call gives up.
    max_retry_after: float = 30.0
    sleep: Sleep = asyncio.sleep

    def delay(self, attempt: int) -> float:
        """Backoff before retry number `attempt` (1-based), with jitter."""
        return float(
            min(self.max_delay, self.base_delay * 2 ** (attempt - 1)) * (0.5 + random.random())
        )

    def wait_before_retry(self, attempt: int, error: BackendError) -> float | None:
        """Seconds to wait before sending attempt `attempt` + 1 again; None: do not retry."""
        if not error.transient or attempt >= self.attempts:
            return None
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_retry_after else None
        return self.delay(attempt)


BackendFactory = Callable[[str, str, float, str], ChatBackend]


@dataclass(frozen=True)
class Endpoint:
    """Where one model's calls go (its connection): address and key, None for the global."""

    api_base: str | None = None
    api_key: str | None = None


# The connection of a model string, if it has one (model presets); looked up per call.
EndpointResolver = Callable[[str], Awaitable[Endpoint | None]]


def backend_address(
    settings: Settings,
    model: str,
    *,
    endpoint: Endpoint | None = None,
    for_embedding: bool = False,
) -> tuple[str, str, str]:
    """Where calls for `model` go: the backend kind ("ollama" or "litellm"), the address
    ("" for the backend's default) and the key, from the settings and its connection."""
    kind = "ollama" if is_ollama_model(model) else "litellm"
    chat_kind = "ollama" if settings.uses_ollama else "litellm"
    base = settings.llm_api_base if kind == chat_kind or not for_embedding else ""
    if kind == "litellm" and base.rstrip("/") == OLLAMA_DEFAULT_BASE:
        base = ""  # the Ollama default is no address for other providers
    key = settings.secret("llm_api_key") if kind == chat_kind else ""
    if endpoint is not None and endpoint.api_base is not None:
        # Another address never receives the global key: only the connection's own.
        base, key = endpoint.api_base, endpoint.api_key or ""
    elif endpoint is not None and endpoint.api_key is not None:
        key = endpoint.api_key
    return kind, base, key


def default_backend_factory(kind: str, api_base: str, timeout: float, api_key: str) -> ChatBackend:
    """Build the backend for `kind` ("ollama" or "litellm"); LiteLLM is imported only here."""
    if kind == "ollama":
        from bot.llm.ollama_backend import OllamaBackend

        return OllamaBackend(api_base or OLLAMA_DEFAULT_BASE, timeout=timeout, api_key=api_key)
    from bot.llm.litellm_backend import LiteLLMBackend

    return LiteLLMBackend(api_base or None, timeout=timeout, api_key=api_key)


@dataclass
class _CallLog:
    session_id: str | None
    model: str
    purpose: str
    request: dict[str, Any]
    started: float
    # What was sent, for the estimate of its tokens when the server does not count them.
    shape: PromptShape = field(default_factory=PromptShape)
    embedding: bool = False
    # Wall-clock start: a member erased since then may be in the request (see api_logs).
    started_at: str = field(default_factory=utcnow)


@dataclass
class _Progress:
    """One attempt of a streamed call so far: the answer's text, whether a delta reached the
    caller, whether the call's api_logs row is written."""

    text: list[str] = field(default_factory=list)
    yielded: bool = False
    logged: bool = False

    def answer(self) -> str | None:
        """The text streamed so far, None when there is none (for the log)."""
        return "".join(self.text) or None


# A logged request larger than this (characters of message text) is serialised and redacted on
# a thread, so a long conversation or a pasted document does not hold the event loop.
LOG_ON_THREAD_CHARS = 32_000


def _rough_chars(request: dict[str, Any]) -> int:
    """About how many characters the request's JSON has (the text of its messages)."""
    total = 50 * len(request.get("tools") or ())
    for message in request.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        total += len(content) if isinstance(content, str) else 1_000
    return total


def _redacted_json(redact: Redactor, request: dict[str, Any]) -> str:
    return redact(json.dumps(request, ensure_ascii=False, default=str))


class LLMGateway:
    """Chooses the backend for a model, retries transient errors and logs every call."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        logs: ApiLogRepository | None = None,
        *,
        retry: RetryPolicy | None = None,
        backend_factory: BackendFactory = default_backend_factory,
        token_factors: TokenFactorRepository | None = None,
        endpoints: EndpointResolver | None = None,
    ) -> None:
        self._settings = settings
        self._logs = logs
        self._retry = retry or RetryPolicy()
        self._factory = backend_factory
        self._backends: dict[tuple[str, str, str], ChatBackend] = {}
        self._calibrator = TokenCalibrator(token_factors)
        self._endpoints = endpoints
        self._endpoint_keys: set[str] = set()
        # The JSON of a turn's tool schemas is the same in each of its calls: estimated once.
        self._tool_tokens = PerToolSet(tool_tokens)

    async def endpoint_for(self, model: str) -> Endpoint | None:
        """The connection's own address and key that calls for `model` use (None: none)."""
        return None if self._endpoints is None else await self._endpoints(model)

    async def _resolved_backend(self, model: str, *, for_embedding: bool = False) -> ChatBackend:
        """The backend of `model` at its connection's address and key, if it has one."""
        endpoint = await self.endpoint_for(model)
        if endpoint is not None and endpoint.api_key:
            self._endpoint_keys.add(endpoint.api_key)
        return self._backend(model, for_embedding=for_embedding, endpoint=endpoint)

    def connection_keys(self) -> list[str]:
        """The keys of the connections used so far (to mask them in any text shown)."""
        return sorted(self._endpoint_keys)

    def _backend(
        self, model: str, *, for_embedding: bool = False, endpoint: Endpoint | None = None
    ) -> ChatBackend:
        settings = self._settings()
        kind, base, key = backend_address(
            settings, model, endpoint=endpoint, for_embedding=for_embedding
        )
        cache_key = (kind, base, key)
        backend = self._backends.get(cache_key)
        if backend is None:
            backend = self._factory(kind, base, settings.llm_timeout, key)
            self._backends[cache_key] = backend
            if kind == "litellm":
                adopt_litellm_logging(debug=wants_library_debug(settings.log_level, settings.debug))
        return backend

    async def warm_up(self) -> None:
        """Build the chat model's backend now, on a thread: its imports and HTTP client would
        otherwise load on the event loop during the first turn."""
        backend = await asyncio.to_thread(self._backend, self._settings().llm_model)
        prepare = getattr(backend, "warm_up", None)
        if prepare is not None:
            await asyncio.to_thread(prepare)

    async def load_token_factors(self) -> None:
        """Read the learned token factors from the database (once, at start)."""
        await self._calibrator.load()

    def token_factor(self, model: str) -> float:
        """Real prompt tokens per estimated token for `model` (1.0 until calibrated)."""
        return self._calibrator.factor(model)

    def token_calibration(self, model: str) -> Calibration:
        """What has been learned about `model`'s token counts (factor, samples, reliability)."""
        return self._calibrator.calibration(model)

    async def _learn(
        self,
        call: _CallLog,
        messages: list[Message],
        tools: list[ToolSchema] | None,
        usage: Usage | None,
    ) -> None:
        """Move the model's token factor toward what the backend counted for this prompt."""
        if usage is None or usage.prompt_tokens is None:
            return
        await self._calibrator.observe(
            call.model,
            estimated=prompt_tokens(messages) + (self._tool_tokens(tools) if tools else 0),
            reported=usage.prompt_tokens,
            window=self._settings().llm_context_tokens,
            conversation=None if call.session_id is None else (call.session_id, call.purpose),
            has_images=any(message.get("images") for message in messages),
        )

    def _redactor(self) -> Redactor:
        return Redactor([*self._settings().secret_values(), *self._endpoint_keys])

    async def _write_log(
        self,
        call: _CallLog,
        *,
        response: str | None,
        error: str | None,
        usage: Usage | None,
    ) -> None:
        if self._logs is None:
            return
        redact = self._redactor()
        counts = counted_usage(
            usage,
            call.shape,
            response,
            factor=self._calibrator.factor(call.model),
            embedding=call.embedding,
        )
        try:
            if _rough_chars(call.request) > LOG_ON_THREAD_CHARS:
                request_json = await asyncio.to_thread(_redacted_json, redact, call.request)
            else:
                request_json = _redacted_json(redact, call.request)
            await self._logs.add(
                session_id=call.session_id,
                model=call.model,
                purpose=call.purpose,
                request_json=request_json,
                response_text=None if response is None else redact(response),
                error=None if error is None else redact(error),
                latency_ms=elapsed_ms(call.started),
                prompt_tokens=counts.prompt_tokens,
                completion_tokens=counts.completion_tokens,
                cost=counts.cost,
                tokens_estimated=counts.estimated,
                started_at=call.started_at,
            )
        except Exception:
            log.exception("could not write api log")

    @staticmethod
    def _user_error(exc: BackendError) -> LLMError:
        """The error callers see: `short` for the person chatting, the sentence as detail."""
        if exc.kind is ModelErrorKind.UNREACHABLE:
            return LLMUnavailableError(exc.short, detail=str(exc))
        return LLMError(exc.short, detail=str(exc))

    @staticmethod
    def _as_backend_error(exc: Exception, model: str) -> BackendError:
        """A backend's own failure as is; anything else it raised (a bug) as a BackendError."""
        if isinstance(exc, BackendError):
            return exc
        log.debug("unexpected failure of the backend for %s", model, exc_info=exc)
        return internal(f"The call to {model} failed unexpectedly ({type(exc).__name__}: {exc})")

    async def _retry_or_fail(
        self,
        call: _CallLog,
        exc: BackendError,
        attempt: int,
        *,
        response: str | None = None,
        retry: bool = True,
    ) -> None:
        """Wait before the next attempt; or log the failed call once and raise its LLMError.

        One WARNING and one api_logs row per failed call, however many attempts it took;
        each retried attempt is a DEBUG line.
        """
        delay = self._retry.wait_before_retry(attempt, exc) if retry else None
        if delay is not None:
            log.debug(
                "%s call to %s failed (%s, attempt %d of %d), retrying in %.2f s: %s",
                call.purpose,
                call.model,
                exc.kind,
                attempt,
                self._retry.attempts,
                delay,
                exc,
            )
            try:
                await self._retry.sleep(delay)
            except asyncio.CancelledError:
                await self._write_log(call, response=response, error=CANCELLED, usage=None)
                raise
            return
        _note_attempts(call, attempt)
        tries = f" after {attempt} attempts" if attempt > 1 else ""
        log.warning(
            "%s call to %s failed%s (%s): %s", call.purpose, call.model, tries, exc.kind, exc
        )
        await self._write_log(call, response=response, error=str(exc), usage=None)
        raise self._user_error(exc) from exc

    async def stream(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSchema] | None = None,
        model: str | None = None,
        session_id: str | None = None,
        purpose: str = "chat",
        max_tokens: int | None = None,
    ) -> AsyncGenerator[StreamDelta, None]:
        """Stream an answer; raises LLMError (user-facing text) when the model fails.

        The server stops the answer at `max_tokens` (default: the purpose's answer limit).
        Transient failures before the first delta are retried; closing the generator early
        closes the backend's stream (and its connection). One api_logs row per call.
        """
        settings = self._settings()
        name = model or settings.llm_model
        window = settings.llm_context_tokens
        limit = answer_limit(purpose, window) if max_tokens is None else max_tokens
        backend = await self._resolved_backend(name)
        request: dict[str, Any] = {"model": name, "messages": messages, "max_tokens": limit}
        request["tools"] = _tool_names(tools)
        shape = PromptShape(messages, tools)
        call = _CallLog(session_id, name, purpose, request, loop_now(), shape)
        attempt = 1
        while True:
            progress = _Progress()
            try:
                async with aclosing(
                    backend.stream(name, messages, tools, window, max_tokens=limit)
                ) as deltas:
                    async for delta in deltas:
                        if delta.done:
                            progress.logged = True
                            _note_attempts(call, attempt)
                            await self._log_answer(call, progress, delta, messages, tools)
                        else:
                            progress.text.append(delta.text)
                        progress.yielded = True
                        yield delta
                return
            except (GeneratorExit, asyncio.CancelledError) as stop:
                if not progress.logged:
                    await self._log_stopped(call, progress, stop)
                raise
            except Exception as failure:
                await self._retry_or_fail(
                    call,
                    self._as_backend_error(failure, name),
                    attempt,
                    response=progress.answer(),
                    # Once a delta reached the caller, sending the call again would repeat it.
                    retry=not progress.yielded,
                )
            attempt += 1

    async def _log_answer(
        self,
        call: _CallLog,
        progress: _Progress,
        done: StreamDelta,
        messages: list[Message],
        tools: list[ToolSchema] | None,
    ) -> None:
        """A streamed call finished: its api_logs row, and what its usage teaches the token
        factor."""
        await self._write_log(
            call, response=_logged_answer(progress.text, done), error=None, usage=done.usage
        )
        await self._learn(call, messages, tools, done.usage)

    async def _log_stopped(self, call: _CallLog, progress: _Progress, stop: BaseException) -> None:
        """The caller closed the stream (GeneratorExit) or was cancelled before it finished."""
        if isinstance(stop, GeneratorExit):
            reason = STOPPED_BY_CALLER
        elif SUPERSEDED in stop.args:
            reason = SUPERSEDED
            log.info(
                "%s call to %s superseded by the member's next message", call.purpose, call.model
            )
        else:
            reason = CANCELLED
        await self._write_log(call, response=progress.answer(), error=reason, usage=None)

    async def complete(
        self,
        messages: list[Message],
        *,
        model: str | None = None,
        session_id: str | None = None,
        purpose: str = "complete",
        max_tokens: int | None = None,
    ) -> Completion:
        """A whole answer without tools (summaries, tags, topic openers), at most `max_tokens`
        long (default: the purpose's answer limit)."""
        settings = self._settings()
        name = model or settings.llm_model
        window = settings.llm_context_tokens
        limit = answer_limit(purpose, window) if max_tokens is None else max_tokens
        backend = await self._resolved_backend(name)
        call = _CallLog(
            session_id,
            name,
            purpose,
            {"model": name, "messages": messages, "max_tokens": limit},
            loop_now(),
            PromptShape(messages),
        )
        attempt = 1
        while True:
            try:
                result = await backend.complete(name, messages, window, max_tokens=limit)
            except Exception as failure:
                await self._retry_or_fail(call, self._as_backend_error(failure, name), attempt)
                attempt += 1
                continue
            _note_attempts(call, attempt)
            await self._write_log(call, response=result.text, error=None, usage=result.usage)
            await self._learn(call, messages, None, result.usage)
            return result

    def embed_model(self) -> str | None:
        """The embedding model in effect: EMBED_MODEL, else Ollama's default when on Ollama."""
        settings = self._settings()
        if settings.embed_model:
            return settings.embed_model
        return DEFAULT_OLLAMA_EMBED_MODEL if settings.uses_ollama else None

    async def embed(
        self,
        texts: list[str],
        *,
        model: str | None = None,
        session_id: str | None = None,
        purpose: str = "embed",
    ) -> list[list[float]]:
        """One vector per text, logged; raises LLMError when no embedding model answers."""
        name = model or self.embed_model()
        if name is None:
            raise LLMError("No embedding model is configured (set EMBED_MODEL).")
        if not texts:
            return []
        call = _CallLog(
            session_id,
            name,
            purpose,
            {
                "model": name,
                "input": [text[:EMBED_LOG_CHARS] for text in texts],
                "texts": len(texts),
                "chars": sum(len(text) for text in texts),
            },
            loop_now(),
            PromptShape(texts=texts),
            embedding=True,
        )
        try:
            backend = await self._resolved_backend(name, for_embedding=True)
            result: Embeddings = await backend.embed(name, texts)
        except Exception as failure:
            # Not retried: its callers fall back (BM25) and try again on their own schedule.
            exc = self._as_backend_error(failure, name)
            await self._retry_or_fail(call, exc, 1, retry=False)
            raise  # pragma: no cover - _retry_or_fail raises when it may not retry
        vectors = result.vectors
        if len(vectors) != len(texts):
            error = f"The embedding model {name} returned {len(vectors)} vectors."
            await self._write_log(call, response=None, error=error, usage=result.usage)
            raise LLMError(error)
        size = len(vectors[0]) if vectors else 0
        await self._write_log(
            call, response=f"{len(vectors)} vectors of {size}", error=None, usage=result.usage
        )
        return vectors

    async def list_models(self) -> list[str]:
        """Models the configured backend offers (Ollama lists its pulled models).

        Not retried or logged here: a readiness check calls it on its own schedule and reports
        the failure (LLMError.detail) itself.
        """
        try:
            return await (await self._resolved_backend(self._settings().llm_model)).list_models()
        except BackendError as exc:
            raise self._user_error(exc) from exc

    async def close(self) -> None:
        """Close every backend's connections."""
        for backend in self._backends.values():
            await backend.close()
        self._backends.clear()


def _note_attempts(call: _CallLog, attempt: int) -> None:
    """Record in the call's logged request how many attempts it took, when more than one."""
    if attempt > 1:
        call.request["attempts"] = attempt


def _tool_names(tools: list[ToolSchema] | None) -> list[str]:
    return [tool["function"]["name"] for tool in tools or ()]


def _logged_answer(text: list[str], done: StreamDelta) -> str:
    """The streamed answer as the API log keeps it: the text, then the tool calls, if any."""
    response = "".join(text)
    if done.tool_calls:
        calls = [{"name": c.name, "arguments": c.arguments} for c in done.tool_calls]
        response += "\n[tool_calls] " + json.dumps(calls, ensure_ascii=False)
    return response
