"""What the rest of the bot sees of MCP: server states, without importing the MCP SDK.

The SDK costs about half a second to import, so it is loaded only when MCP_CONFIG is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

ConnectionState = Literal["connected", "connecting", "down", "disabled"]


@dataclass(frozen=True)
class ServerStatus:
    """One configured MCP server as the admin API and /tools show it."""

    name: str
    transport: str
    target: str
    state: ConnectionState
    error: str | None
    tools: list[str] = field(default_factory=list)
    connects: int = 0
    protocol: str | None = None


class McpTools(Protocol):
    """The MCP manager as services see it."""

    @property
    def config_error(self) -> str | None:
        """Why the whole config file is unusable, if it is."""
        ...

    def status(self) -> list[ServerStatus]:
        """Every configured server."""
        ...

    async def start(self) -> None:
        """Connect the configured servers."""
        ...

    async def close(self) -> None:
        """Disconnect and remove their tools."""
        ...


class NoMcp:
    """Stands in for the manager when no MCP_CONFIG is set."""

    config_error: str | None = None

    def status(self) -> list[ServerStatus]:
        """No servers."""
        return []

    async def start(self) -> None:
        """Nothing to connect."""

    async def close(self) -> None:
        """Nothing to close."""
