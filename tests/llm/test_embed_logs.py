"""Embedding calls are logged in api_logs like chat calls: model, latency, tokens, errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.errors import LLMError
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.api_logs import ApiLog, ApiLogFilter
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, HttpError

EMBED_MODELS = {"ollama": "ollama/nomic-embed-text", "litellm": "openai/embed-model"}


@pytest.fixture
async def embedding(
    make_settings: SettingsFactory, backend: str, service_options: ServiceOptions
) -> AsyncIterator[Services]:
    """Services whose embedding model is on the same loopback server as the chat model."""
    extra = {} if backend == "ollama" else {"embed_model": EMBED_MODELS["litellm"]}
    async with open_services(make_settings(backend, **extra), service_options) as services:
        yield services


async def logs(services: Services) -> list[ApiLog]:
    return list(reversed(await services.repos.api_logs.list(ApiLogFilter())))


async def test_an_embedding_call_leaves_a_log_row(
    embedding: Services, backend: str, llm: FakeLLMServer
) -> None:
    texts = ["green tea from Shizuoka", "how to brew sencha " * 40]
    vectors = await embedding.gateway.embed(texts)
    assert len(vectors) == 2
    (row,) = await logs(embedding)
    assert (row.model, row.purpose, row.error) == (EMBED_MODELS[backend], "embed", None)
    assert row.prompt_tokens is not None and row.prompt_tokens > 0, "the server's count"
    assert row.latency_ms >= 0 and row.response_text == f"2 vectors of {len(vectors[0])}"
    request = json.loads(row.request_json)
    assert request["texts"] == 2 and request["chars"] == sum(map(len, texts))
    assert request["input"][0] == texts[0] and len(request["input"][1]) == 200, "cut, not whole"
    (sent,) = [r for r in llm.requests if "embed" in r.path]
    assert sent.json["input"] == texts, "the model still gets every text whole"


async def test_a_failed_embedding_call_leaves_an_error_row(
    embedding: Services, backend: str, llm: FakeLLMServer
) -> None:
    llm.embed_error = HttpError(400, "FakeLLMServer: this model does not embed")
    with pytest.raises(LLMError):
        await embedding.gateway.embed(["anything"], session_id="s1")
    (row,) = await logs(embedding)
    assert (row.model, row.purpose, row.session_id) == (EMBED_MODELS[backend], "embed", "s1")
    assert row.error is not None and "400" in row.error
    assert row.response_text is None


async def test_the_local_knowledge_base_embeds_through_the_logged_gateway(
    embedding: Services, backend: str
) -> None:
    kb_dir = Path(embedding.settings().kb_dir)
    kb_dir.mkdir(parents=True, exist_ok=True)
    (kb_dir / "tea.md").write_text("# Tea\n\nSencha is steamed green tea.\n", "utf-8")
    report = await embedding.local_kb.sync()
    assert report.embedded == 1
    rows = await logs(embedding)
    assert [(row.purpose, row.model) for row in rows] == [("embed", EMBED_MODELS[backend])]
