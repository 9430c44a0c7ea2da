"""Shared fixtures: settings on a temporary database, the loopback LLM, opened services."""

from __future__ import annotations

import os

# LiteLLM must never fetch its price list (no internet here); set before anything imports it.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.llm.gateway import RetryPolicy
from bot.runtime.event_loop import LoopFactory, loop_factory
from bot.services import ServiceOptions, Services, open_services
from bot.store.engine.dialect import sqlite_url
from bot.utils.log_setup import CHATTY_LOGGERS, NOISY_LOGGERS
from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.postgres import (
    SKIP_REASON,
    TempPostgres,
    database_url,
    engine,
    find_bin_dir,
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
# The models the loopback LLM offers (`llm`).
LLM_MODELS = ("test-model", "other-model")

# `--database` (or PLAYCHAT_TEST_DATABASE): the engine under `make_settings` for the whole run.
TEST_DATABASES = ("sqlite", "postgresql")
TEST_DATABASE_ENV = "PLAYCHAT_TEST_DATABASE"
SUITE_DB_NAME = "playchat.db"

# What `import litellm` adds to the process's warning filters (litellm._process_defaults).
# pytest restores the filters after every test, so they held only in the test that happened to
# import LiteLLM; in later tests LiteLLM's first streamed chunk builds pydantic schemas whose
# warning our "error" filter raised inside LiteLLM, failing the call after the server answered.
LITELLM_WARNING_FILTERS = (
    "ignore:.*`ReadOnly` qualifier:UserWarning",
    "ignore:.*conflict with protected namespace:UserWarning",
)


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, LoopFactory]:
    """Every async test runs on the loop `python -m bot` runs on (uvloop where installed)."""
    return {"product": loop_factory() or asyncio.new_event_loop}


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--database {sqlite,postgresql}`: the engine every `make_settings` database lives on."""
    parser.addoption(
        "--database",
        choices=TEST_DATABASES,
        default=os.environ.get(TEST_DATABASE_ENV) or "sqlite",
        help=f"engine of the suite's databases (default sqlite, or ${TEST_DATABASE_ENV})",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Keep LiteLLM's own warning filters in every test; register the `sqlite_only` marker."""
    for line in LITELLM_WARNING_FILTERS:
        config.addinivalue_line("filterwarnings", line)
    config.addinivalue_line(
        "markers",
        "sqlite_only(reason): tests SQLite itself (its file, WAL, online backup); "
        "skipped with the reason under --database postgresql",
    )
    if suite_engine(config) == "postgresql" and find_bin_dir() is None:
        # Asked for by name: a run whose every database test skipped would look green.
        raise pytest.UsageError(f"--database postgresql: {SKIP_REASON}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under --database postgresql, skip the `sqlite_only` tests with their reason."""
    if suite_engine(config) != "postgresql":
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {reason}"))


def suite_engine(config: pytest.Config) -> str:
    """The engine of this run: `sqlite` or `postgresql` (--database)."""
    return str(config.getoption("--database"))


@pytest.fixture
def new_database_url(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[str], str]]:
    """new_database_url(name): another empty database of this run's engine, a SQLite file
    `name` in tmp_path or a fresh database on the session's temporary PostgreSQL cluster
    (dropped after the test: thousands of them would fill the disk)."""
    server: TempPostgres | None = None
    if suite_engine(request.config) == "postgresql":
        server = request.getfixturevalue("postgres_server")
    made: list[str] = []

    def make(name: str) -> str:
        if server is None:
            return sqlite_url(tmp_path / name)
        made.append(server.create_database())
        return made[-1]

    yield make
    for url in made:
        assert server is not None
        server.psql(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


@pytest.fixture
def suite_database_url(new_database_url: Callable[[str], str]) -> str:
    """This test's own database (the one make_settings uses) on the run's engine."""
    return new_database_url(SUITE_DB_NAME)


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
    async with FakeLLMServer(models=LLM_MODELS) as server:
        yield server


@pytest.fixture(params=["ollama", "litellm"])
def backend(request: pytest.FixtureRequest) -> str:
    """Run a test once over the ollama client and once over LiteLLM."""
    return str(request.param)


@pytest.fixture
def make_settings(tmp_path: Path, llm: FakeLLMServer, suite_database_url: str) -> SettingsFactory:
    """Settings on a temporary database (SQLite file, or PostgreSQL under --database
    postgresql), pointed at the loopback LLM (Ollama by default)."""

    def factory(backend: str = "ollama", **overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "db_path": tmp_path / SUITE_DB_NAME,
            "kb_dir": tmp_path / "kb",
            "language": "en",
            "llm_timeout": 10.0,
        }
        if not suite_database_url.startswith("sqlite"):
            values["database_url"] = suite_database_url
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
    """Fast retries so scripted failures do not slow the suite; no start-up warm-up (its Janome
    worker process per opening cost the suite minutes of CPU; the analyzer still starts on first
    use, and tests/chat/test_warmup.py tests the warm-up itself)."""
    return ServiceOptions(retry=FAST_RETRY, builtin_tools=False, warm_start=False)


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
