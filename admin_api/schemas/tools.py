"""What the model can use (an MCP server's state is `bot.tools.mcp.status.ServerStatus`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from bot.tools.mcp.status import ServerStatus

ServerName = Annotated[str, Field(min_length=1, max_length=200)]
ToolState = Literal["enabled", "disabled", "server_down"]


class ToolOut(BaseModel):
    """One tool: `source` is `builtin`-style for the bot's own, `mcp:<server>` for MCP tools.

    `state`: enabled (offered to the model now), server_down (its MCP server is not connected;
    it comes back when the server does), disabled (its server is disabled in the config).
    """

    name: str
    description: str
    source: str
    server: str | None = None
    state: ToolState = "enabled"


class ToolsOut(BaseModel):
    """Tools and MCP servers."""

    tools: list[ToolOut]
    mcp_servers: list[ServerStatus]
    mcp_config_error: str | None


class McpReloadOut(BaseModel):
    """What re-reading MCP_CONFIG did (server names), and every server's state afterwards.

    `error` set: the file could not be used and nothing changed.
    """

    added: list[str]
    removed: list[str]
    restarted: list[str]
    unchanged: list[str]
    error: str | None
    mcp_servers: list[ServerStatus]
