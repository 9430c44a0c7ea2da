"""What the model can use: every registered tool and the state of each MCP server."""

from __future__ import annotations

import dataclasses

from pydantic import BaseModel

from admin_api.deps import AdminDeps
from admin_api.routing import AnyRoute, Empty, In, Route

TAG = "tools"


class ToolOut(BaseModel):
    """One tool offered to the model."""

    name: str
    description: str
    source: str


class McpServerOut(BaseModel):
    """One configured MCP server."""

    name: str
    transport: str
    target: str
    state: str
    error: str | None
    tools: list[str]
    connects: int
    protocol: str | None


class ToolsOut(BaseModel):
    """Tools and MCP servers."""

    tools: list[ToolOut]
    mcp_servers: list[McpServerOut]
    mcp_config_error: str | None


async def list_tools(call: In[Empty, Empty, Empty]) -> ToolsOut:
    """Built-in and MCP tools, and every configured MCP server with its state."""
    services = call.ctx.services
    tools = [
        ToolOut(
            name=name,
            description=str(tool.schema.get("function", {}).get("description", "")),
            source=tool.source,
        )
        for name in services.registry.names()
        if (tool := services.registry.get(name)) is not None
    ]
    return ToolsOut(
        tools=tools,
        mcp_servers=[McpServerOut(**dataclasses.asdict(s)) for s in services.mcp.status()],
        mcp_config_error=services.mcp.config_error,
    )


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """The tools route."""
    return [
        Route(
            method="GET",
            path="/api/tools",
            handler=list_tools,
            summary="Tools the model can use and MCP server states",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=ToolsOut,
        )
    ]
