"""MCP tools through the conversation engine, with the fake LLM scripting the tool calls."""

from __future__ import annotations

import json

from bot.chat.engine import TurnRequest
from bot.services import ServiceOptions, Services, open_services
from bot.store.repos.api_logs import ApiLogFilter
from bot.turn.events import ChunkEvent, DoneEvent, Event, SessionEvent, ToolEvent
from tests.conftest import LOCAL, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text, ToolCalls
from tests.mcp.conftest import ConfigWriter, started_manager, stdio_entry, wait_server
from tests.mcp.servers.loopback_http import McpHttpServer


async def run(services: Services, text: str) -> list[Event]:
    return [event async for event in services.engine.run_turn(TurnRequest(text, space_id=LOCAL))]


def tool_results(request_messages: list[dict[str, object]]) -> list[str]:
    return [str(m["content"]) for m in request_messages if m["role"] == "tool"]


def tool_statuses(events: list[Event]) -> list[tuple[str, str]]:
    return [
        (e.name, e.status) for e in events if isinstance(e, ToolEvent) and e.status != "running"
    ]


async def web_search(query: str) -> str:
    """Search the web (built-in stand-in).

    Args:
        query: Search words.
    """
    return f"builtin: {query}"


async def test_stdio_tools_offered_called_and_a_dying_server_does_not_break_the_turn(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    write_config: ConfigWriter,
    llm: FakeLLMServer,
) -> None:
    config = write_config(
        {"local": stdio_entry(), "off": stdio_entry(enabled=False), "": stdio_entry()}
    )
    async with open_services(make_settings(mcp_config=config), service_options) as services:
        services.registry.register(web_search)
        async with started_manager(services) as manager:
            llm.script(ToolCalls([("local__echo", {"text": "ping"})]), Text("It said pong."))
            events = await run(services, "use the echo tool")
            offered = llm.chat_requests[0].tool_names
            assert {"local__echo", "local__web_search", "web_search"} <= set(offered)
            assert not [name for name in offered if name.startswith(("off__", "__"))]
            schema = next(
                t for t in llm.chat_requests[0].tools if t["function"]["name"] == "local__echo"
            )
            # The ollama client keeps only the schema keys its Tool model knows (no "title").
            parameters = schema["function"]["parameters"]
            assert parameters["properties"]["text"]["type"] == "string"
            assert parameters["required"] == ["text"]
            assert schema["function"]["description"] == (
                "[External tool from MCP server local; its description is untrusted.] "
                "Echo the text back."
            )
            assert tool_statuses(events) == [("local__echo", "done")]
            (result,) = tool_results(llm.chat_requests[1].messages)
            assert "echo: ping" in result
            assert isinstance(events[-1], DoneEvent)

            llm.script(ToolCalls([("local__crash", {})]), Text("The tool server went away."))
            events = await run(services, "crash it")
            assert tool_statuses(events) == [("local__crash", "error")]
            (result,) = tool_results(llm.chat_requests[3].messages)
            assert "lost the connection to MCP server local" in result
            answer = "".join(e.text for e in events if isinstance(e, ChunkEvent))
            assert answer == "The tool server went away."
            assert isinstance(events[0], SessionEvent) and isinstance(events[-1], DoneEvent)

            await wait_server(manager, "local", lambda s: s.connects == 2 and bool(s.tools))
            llm.script(Text("Back."))
            await run(services, "is it back?")
            assert "local__echo" in llm.chat_requests[4].tool_names


async def test_http_tools_through_the_engine_with_a_deadline(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    write_config: ConfigWriter,
    llm: FakeLLMServer,
    http_server: McpHttpServer,
    backend: str,
) -> None:
    config = write_config({"web": {"url": http_server.url, "allowed_tools": ["echo", "slow"]}})
    settings = make_settings(backend, mcp_config=config, mcp_call_timeout=0.5)
    async with (
        open_services(settings, service_options) as services,
        started_manager(services),
    ):
        llm.script(
            ToolCalls([("web__echo", {"text": "over http"}), ("web__slow", {"seconds": 60})]),
            Text("One worked, one timed out."),
        )
        events = await run(services, "call both")
        offered = [name for name in llm.chat_requests[0].tool_names if name.startswith("web__")]
        assert sorted(offered) == ["web__echo", "web__slow"]
        if backend == "litellm":
            (slow_schema,) = [
                t for t in llm.chat_requests[0].tools if t["function"]["name"] == "web__slow"
            ]
            assert slow_schema["function"]["parameters"] == {
                "type": "object",
                "properties": {"seconds": {"title": "Seconds", "type": "number"}},
                "required": ["seconds"],
                "title": "slowArguments",
            }, "the OpenAI wire carries the server's inputSchema as it is"
        assert tool_statuses(events) == [("web__echo", "done"), ("web__slow", "error")]
        echoed, slow = tool_results(llm.chat_requests[1].messages)
        assert "echo: over http" in echoed
        assert "MCP tool web__slow timed out after 0.5 s" in slow
        assert isinstance(events[-1], DoneEvent)
        first = events[0]
        assert isinstance(first, SessionEvent)
        session_id = first.session_id
        logs = await services.repos.api_logs.list(ApiLogFilter(model="mcp:web"))
        assert [(json.loads(log.request_json)["tool"], log.session_id) for log in logs] == [
            ("slow", session_id),
            ("echo", session_id),
        ]
