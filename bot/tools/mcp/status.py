"""What the rest of the bot sees of MCP: server states, without importing the MCP SDK.

The SDK costs about half a second to import, so it is loaded only when MCP_CONFIG is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

ConnectionState = Literal["connected", "connecting", "down", "disabled"]
NO_CONFIG = "MCP_CONFIG was not set when PlayChat started; set it and restart to use MCP."


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


@dataclass(frozen=True)
class KnownTool:
    """An MCP tool last offered by its server: listed even while that server is down."""

    name: str
    server: str
    description: str


@dataclass(frozen=True)
class ReloadReport:
    """What re-reading MCP_CONFIG changed (server names), or why it could not be read."""

    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    error: str | None = None


class McpTools(Protocol):
    """The MCP manager as services see it."""

    @property
    def config_error(self) -> str | None:
        """Why the whole config file is unusable, if it is."""
        ...

    def status(self) -> list[ServerStatus]:
        """Every configured server."""
        ...

    def known_tools(self) -> list[KnownTool]:
        """Every tool the servers offered, whether or not their server is up now."""
        ...

    async def start(self) -> None:
        """Connect the configured servers."""
        ...

    async def reload(self) -> ReloadReport:
        """Re-read the config: start new servers, stop removed ones, restart changed ones."""
        ...

    async def reconnect(self, name: str) -> bool:
        """Drop and reconnect one server; False when no such server is configured."""
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

    def known_tools(self) -> list[KnownTool]:
        """No tools."""
        return []

    async def start(self) -> None:
        """Nothing to connect."""

    async def reload(self) -> ReloadReport:
        """Nothing to read: MCP_CONFIG was not set when the bot started."""
        return ReloadReport(error=NO_CONFIG)

    async def reconnect(self, name: str) -> bool:
        """No server to reconnect."""
        return False

    async def close(self) -> None:
        """Nothing to close."""
