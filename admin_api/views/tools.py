"""What the model can use: every registered tool and the state of each MCP server."""

from __future__ import annotations

from admin_api.routing import Route
from admin_api.schemas.tools import ToolOut, ToolsOut
from bot.services import Services


async def list_tools(services: Services) -> ToolsOut:
    """Tools the model can use and MCP server states.

    Built-in and MCP tools, and every configured MCP server with its state.
    """
    registry = services.registry
    tools = [
        ToolOut(
            name=name,
            description=str(tool.schema.get("function", {}).get("description", "")),
            source=tool.source,
        )
        for name in registry.names()
        if (tool := registry.get(name)) is not None
    ]
    return ToolsOut(
        tools=tools,
        mcp_servers=list(services.mcp.status()),
        mcp_config_error=services.mcp.config_error,
    )


def routes() -> list[Route]:
    """The tools route."""
    return [Route("GET", "/api/tools", list_tools)]
