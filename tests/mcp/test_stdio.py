"""The MCP manager with stdio servers: the demo script run with this Python, and bad commands."""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bot.services import ServiceOptions, open_services
from bot.tools.mcp.client import McpTuning
from tests.conftest import SettingsFactory
from tests.mcp.conftest import ConfigWriter, server, started_manager, stdio_entry, wait_server


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_stdio_server_environment_crash_reconnect_and_shutdown(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    write_config: ConfigWriter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLAYCHAT_PARENT_ONLY", "not for servers")
    config = write_config({"local": stdio_entry(env={"DEMO_SETTING": "from config"})})
    async with open_services(make_settings(mcp_config=config), service_options) as services:
        execute = services.registry.execute
        async with started_manager(services) as manager:
            first = server(manager, "local")
            assert (first.state, first.transport, first.connects) == ("connected", "stdio", 1)
            assert "local__echo" in first.tools
            configured = await execute("local__env_value", {"name": "DEMO_SETTING"})
            assert configured.text == "from config"
            parent_only = await execute("local__env_value", {"name": "PLAYCHAT_PARENT_ONLY"})
            assert parent_only.text == "<unset>"

            crashed = await execute("local__crash", {})
            assert crashed.failed
            assert json.loads(crashed.text) == {"error": "lost the connection to MCP server local"}
            back = await wait_server(
                manager, "local", lambda s: s.connects == 2 and s.state == "connected"
            )
            assert back.tools == first.tools
            assert (await execute("local__echo", {"text": "again"})).text == "echo: again"
            pid = int((await execute("local__pid", {})).text)
            assert process_alive(pid)
        assert not process_alive(pid), "closing the manager stops the server process"
        assert not [name for name in services.registry.names() if name.startswith("local__")]


async def test_missing_command_is_down_with_a_clear_error(
    make_settings: SettingsFactory, service_options: ServiceOptions, write_config: ConfigWriter
) -> None:
    config = write_config({"ghost": {"command": "/nonexistent/mcp-server"}})
    async with (
        open_services(make_settings(mcp_config=config), service_options) as services,
        started_manager(services) as manager,
    ):
        ghost = server(manager, "ghost")
        assert ghost.state in ("down", "connecting") and ghost.tools == []
        assert ghost.error is not None and "not found" in ghost.error


async def test_a_silent_server_does_not_hold_up_start_up(
    make_settings: SettingsFactory, service_options: ServiceOptions, write_config: ConfigWriter
) -> None:
    # Reads stdin until it closes and never answers: the handshake can only time out.
    mute = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
    config = write_config({"mute": mute})
    tuning = McpTuning(connect_timeout=1.0, heartbeat_interval=1.0, backoff_initial=5.0)
    options = replace(service_options, mcp_tuning=tuning, mcp_startup_wait=0.3)
    started = time.perf_counter()
    async with open_services(make_settings(mcp_config=config), options) as services:
        manager = services.mcp
        assert time.perf_counter() - started < 2.0, "start-up waited at most startup_wait"
        assert server(manager, "mute").state == "connecting"
        down = await wait_server(manager, "mute", lambda s: s.state == "down")
        assert down.error == "timed out" and down.tools == []
    assert time.perf_counter() - started < 7.0, "close() does not wait out the backoff"


async def test_no_config_and_a_broken_config_leave_the_bot_running(
    make_settings: SettingsFactory, service_options: ServiceOptions, tmp_path: Path
) -> None:
    async with (
        open_services(make_settings(), service_options) as services,
        started_manager(services) as manager,
    ):
        assert manager.status() == [] and manager.config_error is None
    broken = make_settings(mcp_config=tmp_path / "missing.json")
    async with open_services(broken, service_options) as services:
        before = services.registry.names()
        async with started_manager(services) as manager:
            assert manager.status() == []
            assert manager.config_error is not None and "not found" in manager.config_error
            assert services.registry.names() == before
