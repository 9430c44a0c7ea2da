"""What the model can use (an MCP server's state is `bot.tools.mcp.status.ServerStatus`)."""

from __future__ import annotations

from pydantic import BaseModel

from bot.tools.mcp.status import ServerStatus


class ToolOut(BaseModel):
    """One tool offered to the model."""

    name: str
    description: str
    source: str


class ToolsOut(BaseModel):
    """Tools and MCP servers."""

    tools: list[ToolOut]
    mcp_servers: list[ServerStatus]
    mcp_config_error: str | None
