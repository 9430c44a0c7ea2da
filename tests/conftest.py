"""Shared fixtures: settings on a temporary database, the loopback LLM, opened services."""

from __future__ import annotations

import os

# LiteLLM must never fetch its price list (no internet here); set before anything imports it.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")

import logging
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.llm.gateway import RetryPolicy
from bot.services import ServiceOptions, Services, open_services
from bot.utils.log_setup import CHATTY_LOGGERS, NOISY_LOGGERS
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.postgres import (
    database_url,
    engine,
    postgres_db,
    postgres_server,
    postgres_url,
)
from tests.fakes.web_server import FakeWebServer

# A temporary PostgreSQL (tests/fakes/postgres.py), for any test that asks for it by name;
# `engine`/`database_url` run a test once on SQLite and once on that PostgreSQL.
__all__ = ["database_url", "engine", "postgres_db", "postgres_server", "postgres_url"]

FAST_RETRY = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.01)
# The local space of the terminal and admin chat under the default LOCAL_SPACE setting.
LOCAL = "local:local"

SettingsFactory = Callable[..., Settings]

# What `import litellm` adds to the process's warning filters (litellm._process_defaults).
# pytest restores the filters after every test, so they held only in the test that happened to
# import LiteLLM; in later tests LiteLLM's first streamed chunk builds pydantic schemas whose
# warning our "error" filter raised inside LiteLLM, failing the call after the server answered.
LITELLM_WARNING_FILTERS = (
    "ignore:.*`ReadOnly` qualifier:UserWarning",
    "ignore:.*conflict with protected namespace:UserWarning",
)


def pytest_configure(config: pytest.Config) -> None:
    """Keep LiteLLM's own warning filters in every test, not only the one that imported it."""
    for line in LITELLM_WARNING_FILTERS:
        config.addinivalue_line("filterwarnings", line)


@pytest.fixture(autouse=True)
def _entry_point_logging_is_undone() -> Iterator[None]:
    """An entry point run in-process (configure_logging) leaves no handler or level behind:
    a root handler would keep writing to that test's captured, later closed, stderr."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in (*NOISY_LOGGERS, *CHATTY_LOGGERS)}
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    for name, saved in levels.items():
        logging.getLogger(name).setLevel(saved)


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLMServer]:
    """A scriptable loopback LLM server (Ollama and OpenAI protocols)."""
    async with FakeLLMServer(models=("test-model", "other-model")) as server:
        yield server


@pytest.fixture(params=["ollama", "litellm"])
def backend(request: pytest.FixtureRequest) -> str:
    """Run a test once over the ollama client and once over LiteLLM."""
    return str(request.param)


@pytest.fixture
def make_settings(tmp_path: Path, llm: FakeLLMServer) -> SettingsFactory:
    """Settings on a temporary database, pointed at the loopback LLM (Ollama by default)."""

    def factory(backend: str = "ollama", **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "db_path": tmp_path / "playchat.db",
            "kb_dir": tmp_path / "kb",
            "language": "en",
            "llm_timeout": 10.0,
        }
        if backend == "ollama":
            values.update(llm_model="ollama/test-model", llm_api_base=llm.url)
        else:
            values.update(
                llm_model="openai/test-model", llm_api_base=llm.openai_base, llm_api_key="sk-test"
            )
        values.update(overrides)
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]

    return factory


@pytest.fixture
def service_options() -> ServiceOptions:
    """Fast retries so scripted failures do not slow the suite."""
    return ServiceOptions(retry=FAST_RETRY, builtin_tools=False)


@pytest.fixture
async def services(
    make_settings: SettingsFactory, backend: str, service_options: ServiceOptions
) -> AsyncIterator[Services]:
    """Opened services over the fake LLM with the parametrised backend."""
    async with open_services(make_settings(backend), service_options) as opened:
        yield opened


@pytest.fixture
async def web() -> AsyncIterator[FakeWebServer]:
    """The loopback web server (tests/tools has its own, module-scoped one)."""
    async with FakeWebServer() as server:
        yield server
