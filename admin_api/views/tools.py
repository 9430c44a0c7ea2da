"""What the model can use: every tool with its state, the MCP servers, reconnect and reload."""

from __future__ import annotations

from admin_api.errors import not_found
from admin_api.routing import Route
from admin_api.schemas.tools import McpReloadOut, ServerName, ToolOut, ToolsOut, ToolState
from bot.services import Services
from bot.tools.mcp.status import ServerStatus


def _offline_state(server: ServerStatus | None) -> ToolState:
    return "disabled" if server is not None and server.state == "disabled" else "server_down"


async def list_tools(services: Services) -> ToolsOut:
    """Every tool with its state, and the MCP servers.

    Built-in and MCP tools offered to the model now (enabled), MCP tools whose server is not
    connected (server_down), and every configured MCP server with its state and last error.
    """
    registry = services.registry
    tools = [
        ToolOut(
            name=name,
            description=str(tool.schema.get("function", {}).get("description", "")),
            source=tool.source,
            server=tool.source.removeprefix("mcp:") if tool.source.startswith("mcp:") else None,
        )
        for name in registry.names()
        if (tool := registry.get(name)) is not None
    ]
    servers = {status.name: status for status in services.mcp.status()}
    tools += [
        ToolOut(
            name=known.name,
            description=known.description,
            source=f"mcp:{known.server}",
            server=known.server,
            state=_offline_state(servers.get(known.server)),
        )
        for known in services.mcp.known_tools()
        if known.name not in registry
    ]
    return ToolsOut(
        tools=tools,
        mcp_servers=list(servers.values()),
        mcp_config_error=services.mcp.config_error,
    )


async def reload_mcp(services: Services) -> McpReloadOut:
    """Re-read MCP_CONFIG without a restart.

    New servers start, removed ones stop, changed ones restart and the others stay connected;
    their tools join or leave what the model is offered from the next turn on. Waits (briefly)
    for new servers' first connection attempt.
    """
    report = await services.mcp.reload()
    return McpReloadOut(
        added=report.added,
        removed=report.removed,
        restarted=report.restarted,
        unchanged=report.unchanged,
        error=report.error,
        mcp_servers=services.mcp.status(),
    )


async def reconnect_mcp_server(services: Services, name: ServerName) -> ServerStatus:
    """Drop one MCP server's connection and connect again (a stdio server is restarted)."""
    if not await services.mcp.reconnect(name):
        raise not_found(f"MCP server {name!r}")
    (status,) = [s for s in services.mcp.status() if s.name == name]
    return status


def routes() -> list[Route]:
    """Tools and MCP routes."""
    return [
        Route("GET", "/api/tools", list_tools),
        Route("POST", "/api/mcp/reload", reload_mcp),
        Route("POST", "/api/mcp/servers/{name}/reconnect", reconnect_mcp_server),
    ]
