"""The model and embedding probes against the loopback LLM server (Ollama `/api/tags` and
`/api/show`, OpenAI-compatible `/v1/models`), the database, MCP and the presence of a bot."""

from __future__ import annotations

from typing import Any

from bot.ops.readiness import ComponentStatus
from bot.services import ServiceOptions, open_services
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer
from tests.ops.conftest import closed_port


async def _check(
    make_settings: SettingsFactory, options: ServiceOptions, backend: str = "ollama", **kw: Any
) -> dict[str, ComponentStatus]:
    async with open_services(make_settings(backend, **kw), options) as services:
        await services.readiness.check()
        return {s.name: s for s in services.readiness.snapshot()}


async def test_ollama_model_present_with_tools_is_ok(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    found = await _check(make_settings, service_options)
    model = found["model"]
    assert model.state == "ok", model
    assert model.facts["tools"] is True
    assert llm.url in model.detail
    assert found["database"].state == "ok"
    assert found["mcp"].state == "disabled"
    assert found["discord"].state == found["scheduler"].state == "unknown"
    paths = [r.path for r in llm.requests]
    assert "/api/tags" in paths and "/api/show" in paths
    assert not llm.chat_requests, "a check costs no model call"


async def test_ollama_model_missing_names_the_pull_and_the_setting(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    model = (await _check(make_settings, service_options, llm_model="ollama/qwen3:8b"))["model"]
    assert model.state == "down"
    assert model.detail == (
        f"Model qwen3:8b is not on the Ollama server at {llm.url}; run `ollama pull qwen3:8b` "
        "or set LLM_MODEL."
    )


async def test_ollama_model_without_tool_support_is_degraded(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    llm.capabilities["test-model"] = ["completion"]
    model = (await _check(make_settings, service_options))["model"]
    assert model.state == "degraded"
    assert "does not support tool calls" in model.detail and "LLM_MODEL" in model.detail


async def test_unreachable_model_server_names_the_address_and_llm_api_base(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    found = await _check(make_settings, service_options, llm_api_base=base)
    assert found["model"].state == "down"
    assert found["model"].detail == (
        f"The model server at {base} is not reachable (connection refused); start Ollama or "
        "set LLM_API_BASE."
    )
    assert found["model"].last_error == "connection refused"
    # The embedding model lives on the same server: no second warning for the same cause.
    assert found["embeddings"].state == "unknown"
    assert "see the model" in found["embeddings"].detail


async def test_embeddings_disabled_missing_and_present(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    hosted = await _check(make_settings, service_options, "litellm")
    assert hosted["embeddings"].state == "disabled"
    assert "EMBED_MODEL is not set" in hosted["embeddings"].detail
    implicit = await _check(make_settings, service_options)  # Ollama's default, not pulled
    assert implicit["embeddings"].state == "disabled"
    assert "ollama pull nomic-embed-text" in implicit["embeddings"].detail
    missing = await _check(make_settings, service_options, embed_model="ollama/embedder")
    assert missing["embeddings"].state == "down"
    assert missing["embeddings"].detail == (
        f"Model embedder is not on the Ollama server at {llm.url}; run `ollama pull embedder` "
        "or set EMBED_MODEL."
    )
    present = await _check(make_settings, service_options, embed_model="ollama/other-model")
    assert present["embeddings"].state == "ok"


async def test_openai_compatible_server_lists_its_models(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    found = await _check(make_settings, service_options, "litellm")
    assert found["model"].state == "ok", found["model"]
    assert any(r.path == "/v1/models" for r in llm.requests)
    missing = await _check(make_settings, service_options, "litellm", llm_model="openai/nope")
    assert missing["model"].state == "down"
    assert "Model nope is not offered" in missing["model"].detail
    assert "LLM_MODEL" in missing["model"].detail


async def test_hosted_provider_is_not_probed(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    found = await _check(
        make_settings, service_options, "litellm", llm_model="openai/gpt-4o", llm_api_base=""
    )
    assert found["model"].state == "unknown"
    assert "LLM_API_KEY" in found["model"].detail
    assert not llm.requests


async def test_a_model_change_at_runtime_is_checked_again(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> None:
    async with open_services(make_settings(), service_options) as services:
        await services.readiness.check()
        assert services.readiness.status("model").state == "ok"
        await services.settings.update({"llm_model": "ollama/missing"})
        await services.tasks.drain()
        assert services.readiness.status("model").state == "down"
