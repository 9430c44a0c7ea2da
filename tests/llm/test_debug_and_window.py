"""DEBUG=true opens the LLM libraries' debug logging; the default window reaches Ollama."""

from __future__ import annotations

import io
import logging

from bot.config import Settings
from bot.services import ServiceOptions, open_services
from bot.utils.log_setup import LITELLM_LOGGERS, RedactingFilter, configure_logging
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text


def levels(*names: str) -> dict[str, int]:
    return {name: logging.getLogger(name).level for name in names}


def test_debug_off_keeps_litellm_quiet() -> None:
    configure_logging("INFO")
    assert levels(*LITELLM_LOGGERS) == dict.fromkeys(LITELLM_LOGGERS, logging.WARNING)
    assert logging.getLogger("LiteLLM").getEffectiveLevel() == logging.WARNING
    assert levels("httpx")["httpx"] == logging.WARNING
    assert logging.getLogger().level == logging.INFO


def test_debug_on_opens_the_llm_libraries_and_our_own_debug() -> None:
    configure_logging("INFO", debug=True)
    names = (*LITELLM_LOGGERS, "httpx", "httpcore")
    assert levels(*names) == dict.fromkeys(names, logging.DEBUG)
    assert logging.getLogger().level == logging.DEBUG
    assert logging.getLogger("bot.llm.gateway").isEnabledFor(logging.DEBUG)
    # SQL parameters (stored API keys among them) stay out even then.
    assert logging.getLogger("aiosqlite").level == logging.INFO


async def test_debug_survives_litellm_quieting_httpx_on_import(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    configure_logging("INFO", debug=True)
    # What `import litellm` does (litellm._logging._suppress_loggers) when first imported.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    settings = make_settings("litellm", debug=True)
    async with open_services(settings, service_options) as services:
        llm.script(Text("hi"))
        await services.gateway.complete([{"role": "user", "content": "hello"}])
    assert logging.getLogger("httpx").level == logging.DEBUG
    assert levels(*LITELLM_LOGGERS) == dict.fromkeys(LITELLM_LOGGERS, logging.DEBUG)


async def test_without_debug_the_gateway_leaves_the_levels_alone(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    configure_logging("INFO")
    async with open_services(make_settings("litellm"), service_options) as services:
        llm.script(Text("hi"))
        await services.gateway.complete([{"role": "user", "content": "hello"}])
    assert levels(*LITELLM_LOGGERS) == dict.fromkeys(LITELLM_LOGGERS, logging.WARNING)


def test_log_lines_are_redacted_when_libraries_print_requests() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter(["plain-secret-value"]))
    logger = logging.getLogger("tests.redacting")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning(
            "POST with api_key=%s and %s", "plain-secret-value", "Bearer sk-abcdef123456"
        )
        logger.warning("nothing secret: %d tokens", 42)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    text = out.getvalue()
    assert "plain-secret-value" not in text and "sk-abcdef123456" not in text
    assert "[REDACTED]" in text and "nothing secret: 42 tokens" in text


def test_the_default_window_is_16384() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.llm_context_tokens == 16384
    assert settings.debug is False


async def test_ollama_is_told_the_window(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    async with open_services(make_settings("ollama"), service_options) as services:
        llm.script(Text("streamed"), Text("whole"))
        async for _ in services.gateway.stream([{"role": "user", "content": "hi"}]):
            pass
        await services.gateway.complete([{"role": "user", "content": "hi"}])
    assert [r.json["options"]["num_ctx"] for r in llm.chat_requests] == [16384, 16384]
