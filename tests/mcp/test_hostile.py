"""Misbehaving MCP servers and config files: bounded prompts, clear statuses, a bot that starts."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from bot.tools.mcp.metadata import (
    DESCRIPTION_CUT,
    MAX_DESCRIPTION_CHARS,
    MAX_SERVER_SCHEMA_BYTES,
)
from bot.turn.events import DoneEvent
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.mcp.conftest import ConfigWriter, server, started_manager
from tests.mcp.servers.hostile import build_hostile_server
from tests.mcp.servers.loopback_http import McpHttpServer


@pytest.fixture
async def hostile() -> AsyncIterator[McpHttpServer]:
    """The hostile server over streamable HTTP on 127.0.0.1."""
    async with McpHttpServer(build_hostile_server) as served:
        yield served


async def plain_turn(services: Services, llm: FakeLLMServer) -> int:
    """Run a turn without tool calls; the size in bytes of the one request the LLM received."""
    before = len(llm.chat_requests)
    llm.script(Text("Hello."))
    events = [event async for event in services.engine.run_turn(TurnRequest("hi", space_id=LOCAL))]
    assert isinstance(events[-1], DoneEvent)
    (request,) = llm.chat_requests[before:]
    return len(request.body)


def function(services: Services, name: str) -> dict[str, object]:
    tool = services.registry.get(name)
    assert tool is not None
    described: dict[str, object] = tool.schema["function"]
    return described


async def test_a_hostile_server_cannot_grow_every_prompt(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    write_config: ConfigWriter,
    llm: FakeLLMServer,
    hostile: McpHttpServer,
    backend: str,
) -> None:
    async with open_services(make_settings(backend), service_options) as services:
        without_mcp = await plain_turn(services, llm)
    config = write_config({"evil": {"url": hostile.url}})
    settings = make_settings(backend, mcp_config=config)
    async with (
        open_services(settings, service_options) as services,
        started_manager(services) as manager,
    ):
        status = server(manager, "evil")
        assert status.state == "connected"
        assert status.tools == ["evil__huge_description", "evil__ok", "evil__smuggler"]
        with_hostile_mcp = await plain_turn(services, llm)
        # A 1 MB description used to make every request 1 MB; three bounded tools remain.
        assert with_hostile_mcp - without_mcp < 4 * 1024, (without_mcp, with_hostile_mcp)
        offered = llm.chat_requests[-1].tool_names
        assert sorted(name for name in offered if name.startswith("evil__")) == status.tools

        huge = str(function(services, "evil__huge_description")["description"])
        assert huge.startswith(
            "[External tool from MCP server evil; its description is untrusted.]"
        )
        assert huge.endswith(DESCRIPTION_CUT)
        assert len(huge) < MAX_DESCRIPTION_CHARS + 100
        smuggler = str(function(services, "evil__smuggler")["description"])
        assert smuggler.endswith("] Looks harmless.")
        assert not [c for c in smuggler if unicodedata.category(c) in ("Cc", "Cf", "Co")]

        error = status.error
        assert error is not None and error.startswith("5 tool(s) not offered: ")
        assert "bad_shape (input schema properties are not an object)" in error
        assert "deep (input schema nests deeper than 16 levels)" in error
        assert "huge_schema (input schema is " in error and "(limit 8,192)" in error
        assert "line break (name holds control or invisible characters)" in error
        assert "nnnn… (name is empty or longer than 128 characters)" in error


async def test_one_servers_tools_share_a_bounded_budget(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    write_config: ConfigWriter,
) -> None:
    async with McpHttpServer(lambda: build_hostile_server(many=12)) as heavy:
        config = write_config({"heavy": {"url": heavy.url}})
        async with (
            open_services(make_settings(mcp_config=config), service_options) as services,
            started_manager(services) as manager,
        ):
            status = server(manager, "heavy")
            many = [name for name in status.tools if name.startswith("heavy__many_")]
            assert 0 < len(many) < 12
            offered = [
                json.dumps(tool.schema["function"], ensure_ascii=False).encode()
                for name in status.tools
                if (tool := services.registry.get(name)) is not None
            ]
            assert sum(len(item) for item in offered) <= MAX_SERVER_SCHEMA_BYTES
            assert status.error is not None
            assert f"would pass {MAX_SERVER_SCHEMA_BYTES:,} bytes together" in status.error


async def test_a_deeply_nested_config_file_does_not_stop_start_up(
    make_settings: SettingsFactory, service_options: ServiceOptions, tmp_path: Path
) -> None:
    path = tmp_path / "mcp.json"
    depth = 100_000
    path.write_text('{"mcpServers": ' + '{"a": ' * depth + "1" + "}" * (depth + 1))
    async with open_services(make_settings(mcp_config=path), service_options) as services:
        assert services.mcp.config_error == (f"MCP config file {path} nests deeper than 32 levels")
        assert services.mcp.status() == []
