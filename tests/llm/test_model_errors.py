"""Model errors are classified once for both backends, retried only when transient, logged once.

The real `ollama` client and the real LiteLLM against the loopback LLM server (or a closed
port); retries wait through a recording sleep, never a real one.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.errors import LLMError, LLMUnavailableError
from bot.llm.backend import NEEDS_KEY, BackendError, ModelErrorKind, parse_retry_after
from bot.llm.gateway import RetryPolicy
from bot.llm.litellm_backend import KEYLESS_PLACEHOLDER
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.api_logs import ApiLog, ApiLogFilter
from bot.utils.log_setup import configure_logging
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, HttpError, Text

ATTEMPTS = 3
SETTINGS_NAMES = ("LLM_API_BASE", "LLM_API_KEY", "LLM_MODEL", "LLM_CONTEXT_TOKENS", "http")


@dataclass
class Sleeps:
    """A RetryPolicy sleep that records the delays instead of waiting."""

    delays: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def options(sleeps: Sleeps) -> ServiceOptions:
    """Three attempts, zero backoff, a recorded Retry-After."""
    policy = RetryPolicy(attempts=ATTEMPTS, base_delay=0, max_delay=0, sleep=sleeps)
    return ServiceOptions(retry=policy, builtin_tools=False)


@pytest.fixture
async def opened(
    make_settings: SettingsFactory, backend: str, options: ServiceOptions
) -> AsyncIterator[Services]:
    async with open_services(make_settings(backend), options) as services:
        yield services


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def openai_error(status: int, message: str, code: str, kind: str) -> HttpError:
    """An error body as OpenAI sends it."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return HttpError(status, body)


def model_missing(backend: str) -> HttpError:
    if backend == "ollama":
        return HttpError(404, 'model "test-model" not found, try pulling it first')
    return openai_error(
        404, "The model `test-model` does not exist", "model_not_found", "invalid_request_error"
    )


def context_too_long(backend: str) -> HttpError:
    if backend == "ollama":
        return HttpError(400, "the input length exceeds the context length")
    return openai_error(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9000 tokens.",
        "context_length_exceeded",
        "invalid_request_error",
    )


async def call(services: Services, how: str) -> str:
    """One gateway call, streamed or whole."""
    messages: list[Any] = [{"role": "user", "content": "hello"}]
    if how == "complete":
        return (await services.gateway.complete(messages)).text
    return "".join([delta.text async for delta in services.gateway.stream(messages)])


async def failure(services: Services, how: str = "stream") -> tuple[LLMError, BackendError]:
    with pytest.raises(LLMError) as raised:
        await call(services, how)
    cause = raised.value.__cause__
    assert isinstance(cause, BackendError)
    return raised.value, cause


async def rows(services: Services) -> list[ApiLog]:
    return list(reversed(await services.repos.api_logs.list(ApiLogFilter())))


def assert_short_for_members(error: LLMError) -> None:
    """What the person chatting reads names no address and no setting."""
    assert not any(name.lower() in str(error).lower() for name in SETTINGS_NAMES), str(error)
    assert "127.0.0.1" not in str(error)


def to_stderr() -> None:
    """What the entry point's configure_logging adds when pytest has not: a stderr handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)  # removed by the conftest's autouse fixture


def failure_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("how", ["stream", "complete"])
async def test_a_closed_port_is_unreachable_retried_and_names_llm_api_base(
    make_settings: SettingsFactory,
    backend: str,
    options: ServiceOptions,
    sleeps: Sleeps,
    caplog: pytest.LogCaptureFixture,
    how: str,
) -> None:
    address = f"http://127.0.0.1:{closed_port()}" + ("/v1" if backend == "litellm" else "")
    caplog.set_level(logging.DEBUG, logger="bot.llm")
    async with open_services(make_settings(backend, llm_api_base=address), options) as services:
        error, cause = await failure(services, how)
        (row,) = await rows(services)
    assert cause.kind is ModelErrorKind.UNREACHABLE and cause.transient
    assert isinstance(error, LLMUnavailableError)
    assert error.detail == str(cause) == row.error
    assert f"The model server at {address} is not reachable (connection refused)" in error.detail
    assert "set LLM_API_BASE" in error.detail
    # Without the address: a random closed port such as 50041 holds "500" itself.
    rest = error.detail.replace(address, "<address>")
    assert "HTTP" not in rest and "500" not in rest
    assert_short_for_members(error)
    assert sleeps.delays == [0.0] * (ATTEMPTS - 1), "retried: three attempts"
    assert json.loads(row.request_json)["attempts"] == ATTEMPTS
    (warning,) = failure_warnings(caplog)
    assert warning.name == "bot.llm.gateway"
    assert "unreachable" in warning.getMessage() and "test-model" in warning.getMessage()
    assert f"after {ATTEMPTS} attempts" in warning.getMessage()
    retried = [r for r in caplog.records if r.levelno == logging.DEBUG and "retrying" in r.msg]
    assert len(retried) == ATTEMPTS - 1


@pytest.mark.parametrize("how", ["stream", "complete"])
async def test_a_rejected_key_is_one_attempt_naming_llm_api_key(
    opened: Services, backend: str, llm: FakeLLMServer, sleeps: Sleeps, how: str
) -> None:
    llm.script(HttpError(401, "Incorrect API key provided"), Text("never asked for"))
    error, cause = await failure(opened, how)
    assert cause.kind is ModelErrorKind.AUTHENTICATION and not cause.transient
    assert len(llm.chat_requests) == 1 and sleeps.delays == []
    # The Ollama server was sent no key, the OpenAI-compatible one a wrong one.
    assert "(HTTP 401); set LLM_API_KEY" in error.detail
    assert ("rejected the API key" in error.detail) == (backend == "litellm")
    assert "OPENAI_API_KEY" not in error.detail
    assert_short_for_members(error)


async def test_litellm_without_any_key_reaches_a_keyless_local_server(
    make_settings: SettingsFactory,
    options: ServiceOptions,
    llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # llama.cpp, LM Studio, vLLM at …/v1: no key at all. The openai client refuses to send a
    # request without one, so a placeholder goes; before, nothing reached the server.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm.script(Text("Hello from a local server."))
    async with open_services(make_settings("litellm", llm_api_key=None), options) as services:
        reply = await services.gateway.complete([{"role": "user", "content": "Hi"}])
    assert reply.text == "Hello from a local server."
    (request,) = llm.chat_requests
    assert request.headers["Authorization"] == f"Bearer {KEYLESS_PLACEHOLDER}"


async def test_a_server_asking_for_a_key_the_bot_lacks_says_so_truthfully(
    make_settings: SettingsFactory,
    options: ServiceOptions,
    llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm.script(HttpError(401, "You didn't provide an API key."))
    async with open_services(make_settings("litellm", llm_api_key=None), options) as services:
        error, cause = await failure(services, "complete")
    assert cause.kind is ModelErrorKind.AUTHENTICATION and len(llm.chat_requests) == 1
    assert "requires an API key (HTTP 401); set LLM_API_KEY" in error.detail
    # Members are not told their credentials were refused: the bot has none.
    assert str(error) == NEEDS_KEY and "refused" not in str(error)
    assert_short_for_members(error)


async def test_litellm_without_a_key_or_an_address_names_llm_api_key(
    make_settings: SettingsFactory,
    options: ServiceOptions,
    llm: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A hosted provider (no LLM_API_BASE) without a key: refused before anything is sent.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = make_settings("litellm", llm_api_key=None, llm_api_base="")
    async with open_services(settings, options) as services:
        error, cause = await failure(services)
    assert cause.kind is ModelErrorKind.AUTHENTICATION
    assert error.detail == "openai/test-model needs an API key and none is set; set LLM_API_KEY."
    assert str(error) == NEEDS_KEY
    assert llm.chat_requests == [], "refused before any request"


@pytest.mark.parametrize("how", ["stream", "complete"])
async def test_a_missing_model_is_one_attempt_naming_llm_model(
    opened: Services, backend: str, llm: FakeLLMServer, how: str
) -> None:
    llm.script(model_missing(backend), Text("never asked for"))
    error, cause = await failure(opened, how)
    assert cause.kind is ModelErrorKind.MODEL_MISSING
    assert len(llm.chat_requests) == 1
    assert "test-model' is not available on" in error.detail
    assert "set LLM_MODEL to a model" in error.detail
    if backend == "ollama":
        assert "`ollama pull test-model`" in error.detail
    assert_short_for_members(error)


async def test_a_missing_embedding_model_names_embed_model(
    make_settings: SettingsFactory, options: ServiceOptions, llm: FakeLLMServer
) -> None:
    llm.embed_error = HttpError(404, 'model "nomic-embed-text" not found, try pulling it first')
    settings = make_settings("ollama", embed_model="ollama/nomic-embed-text")
    async with open_services(settings, options) as services:
        with pytest.raises(LLMError) as raised:
            await services.gateway.embed(["a text"])
    assert "`ollama pull nomic-embed-text` or set EMBED_MODEL" in raised.value.detail
    assert len([r for r in llm.requests if "embed" in r.path]) == 1


async def test_rate_limited_is_retried_after_the_servers_wait(
    opened: Services, llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    llm.script(HttpError(429, "slow down", headers={"Retry-After": "2"}), Text("fine now"))
    assert await call(opened, "stream") == "fine now"
    assert len(llm.chat_requests) == 2 and sleeps.delays == [2.0]
    (row,) = await rows(opened)
    assert row.error is None and json.loads(row.request_json)["attempts"] == 2


async def test_rate_limited_beyond_the_cap_gives_up_at_once(
    opened: Services, llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    llm.script(HttpError(429, "quota", headers={"Retry-After": "3600"}), Text("never"))
    error, cause = await failure(opened)
    assert cause.kind is ModelErrorKind.RATE_LIMITED and cause.retry_after == 3600
    assert len(llm.chat_requests) == 1 and sleeps.delays == []
    assert "rate limiting requests for" in error.detail
    assert "test-model (HTTP 429; it asks to wait 3600 s)" in error.detail
    assert_short_for_members(error)


async def test_rate_limited_without_a_wait_is_retried_with_backoff(
    opened: Services, llm: FakeLLMServer, sleeps: Sleeps
) -> None:
    llm.script(*[HttpError(429, "slow down")] * ATTEMPTS)
    _, cause = await failure(opened)
    assert cause.kind is ModelErrorKind.RATE_LIMITED
    assert len(llm.chat_requests) == ATTEMPTS and len(sleeps.delays) == ATTEMPTS - 1


@pytest.mark.parametrize("how", ["stream", "complete"])
async def test_a_prompt_too_long_is_one_attempt_naming_llm_context_tokens(
    opened: Services, backend: str, llm: FakeLLMServer, how: str
) -> None:
    llm.script(context_too_long(backend), Text("never asked for"))
    error, cause = await failure(opened, how)
    assert cause.kind is ModelErrorKind.CONTEXT_TOO_LONG
    assert len(llm.chat_requests) == 1
    assert "test-model's context window (HTTP 400:" in error.detail
    assert "set LLM_CONTEXT_TOKENS (now 16384)" in error.detail
    assert_short_for_members(error)


async def test_another_4xx_is_a_bad_request_sent_once(opened: Services, llm: FakeLLMServer) -> None:
    llm.script(HttpError(400, "temperature must be at most 2"), Text("never asked for"))
    error, cause = await failure(opened)
    assert cause.kind is ModelErrorKind.BAD_REQUEST and cause.status == 400
    assert len(llm.chat_requests) == 1
    assert "test-model (HTTP 400): temperature must be at most 2" in error.detail


@pytest.mark.parametrize("how", ["stream", "complete"])
async def test_a_server_error_is_retried(
    opened: Services, llm: FakeLLMServer, sleeps: Sleeps, how: str
) -> None:
    llm.script(*[HttpError(500, "boom")] * ATTEMPTS)
    error, cause = await failure(opened, how)
    assert cause.kind is ModelErrorKind.SERVER_ERROR and cause.status == 500
    assert len(llm.chat_requests) == ATTEMPTS and len(sleeps.delays) == ATTEMPTS - 1
    assert "failed (HTTP 500): boom" in error.detail
    assert_short_for_members(error)
    (row,) = await rows(opened)
    assert row.error == error.detail, "one api_logs row per call, not per attempt"


async def test_one_warning_per_failed_call_and_nothing_from_litellm(
    make_settings: SettingsFactory,
    backend: str,
    options: ServiceOptions,
    llm: FakeLLMServer,
    capfd: pytest.CaptureFixture[str],
) -> None:
    async with open_services(make_settings(backend), options) as services:
        capfd.readouterr()
        configure_logging("INFO")
        to_stderr()
        llm.script(HttpError(401, "no"), *[HttpError(503, "busy")] * ATTEMPTS)
        await failure(services)
        await failure(services, "complete")
    out, err = capfd.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert all(line.startswith("WARNING bot.llm.gateway: ") for line in lines), err
    assert "(authentication)" in lines[0] and "(server_error)" in lines[1]
    assert "litellm" not in err.lower().replace("test-model", "")


async def test_litellm_debug_output_appears_with_debug(
    make_settings: SettingsFactory,
    options: ServiceOptions,
    llm: FakeLLMServer,
    capfd: pytest.CaptureFixture[str],
) -> None:
    async with open_services(make_settings("litellm", log_level="DEBUG"), options) as services:
        configure_logging("DEBUG")
        to_stderr()
        llm.script(HttpError(401, "no"))
        await failure(services)
    out, err = capfd.readouterr()
    assert out == "", "LiteLLM never writes to stdout (the terminal chat's answers)"
    assert " LiteLLM: " in err


def test_retry_after_is_read_as_seconds_or_a_date() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412480.0) == 30.0
    assert parse_retry_after("soon") is None


def test_transient_derives_from_the_kind() -> None:
    transient = {kind for kind in ModelErrorKind if BackendError("x", kind=kind).transient}
    assert transient == {
        ModelErrorKind.UNREACHABLE,
        ModelErrorKind.RATE_LIMITED,
        ModelErrorKind.SERVER_ERROR,
    }
