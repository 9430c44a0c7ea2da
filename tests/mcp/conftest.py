"""Fixtures for MCP tests: the demo server (stdio script or loopback HTTP) and config files."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.services import ServiceOptions, Services
from bot.tools.mcp.client import McpTuning
from bot.tools.mcp.manager import McpManager, ServerStatus
from tests.conftest import FAST_RETRY
from tests.mcp.servers.demo import build_server
from tests.mcp.servers.loopback_http import McpHttpServer

DEMO_SCRIPT = Path(__file__).parent / "servers" / "demo.py"
# Fast reconnects and heartbeats so drops are noticed within a test's patience.
FAST = McpTuning(
    connect_timeout=10.0, heartbeat_interval=0.3, backoff_initial=0.05, backoff_max=0.3
)
WAIT = 15.0

ConfigWriter = Callable[[dict[str, Any]], Path]


def stdio_entry(**extra: Any) -> dict[str, Any]:
    """A config entry that runs the demo server over stdio."""
    return {"command": sys.executable, "args": [str(DEMO_SCRIPT)], **extra}


@pytest.fixture
def write_config(tmp_path: Path) -> ConfigWriter:
    """Write `{"mcpServers": servers}` to a temporary file and return its path."""

    def write(servers: dict[str, Any]) -> Path:
        path = tmp_path / "mcp.json"
        path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
        return path

    return write


@pytest.fixture
def service_options() -> ServiceOptions:
    """Services whose MCP manager reconnects fast and waits for servers at start-up."""
    return ServiceOptions(
        retry=FAST_RETRY, builtin_tools=False, mcp_tuning=FAST, mcp_startup_wait=WAIT
    )


@asynccontextmanager
async def started_manager(services: Services) -> AsyncIterator[McpManager]:
    """The services' MCP manager (started by open_services); closed at exit (again: harmless)."""
    try:
        yield services.mcp
    finally:
        await services.mcp.close()


def server(manager: McpManager, name: str) -> ServerStatus:
    """The status of one configured server."""
    (status,) = [s for s in manager.status() if s.name == name]
    return status


async def wait_server(
    manager: McpManager, name: str, check: Callable[[ServerStatus], bool]
) -> ServerStatus:
    """Wait (bounded) until server `name`'s status passes `check`."""
    await manager.wait_for(lambda statuses: check(server(manager, name)), within=WAIT)
    return server(manager, name)


@pytest.fixture
def slow_started() -> asyncio.Event:
    """Set when the in-process demo server begins a `slow` call."""
    return asyncio.Event()


@pytest.fixture
async def http_server(slow_started: asyncio.Event) -> AsyncIterator[McpHttpServer]:
    """The demo server over streamable HTTP on 127.0.0.1 (random port)."""
    async with McpHttpServer(lambda: build_server(slow_started.set)) as served:
        yield served
