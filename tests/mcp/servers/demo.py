"""A small MCP server written with the SDK's server side; run as a script it speaks stdio.

Also built in-process by tests/mcp/servers/loopback_http.py and served over streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

# A 1x1 PNG, enough for an image content block.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


def build_server(on_slow_start: Callable[[], None] = lambda: None) -> MCPServer:
    """The demo server with every tool the tests need; `on_slow_start` runs as `slow` begins."""
    server = MCPServer("demo", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return f"echo: {text}"

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep for a while, then answer."""
        on_slow_start()
        await asyncio.sleep(seconds)
        return "woke up"

    @server.tool()
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        os._exit(3)

    @server.tool()
    def fail() -> str:
        """Report a tool error."""
        raise ToolError("the tool failed on purpose")

    @server.tool(name="web_search")
    def web_search(query: str) -> str:
        """A tool named like PlayChat's built-in web_search."""
        return f"mcp search: {query}"

    @server.tool(name="dotted.name")
    def dotted() -> str:
        """A name with a character tool names of the model may not contain."""
        return "dotted"

    @server.tool(name="dotted_name")
    def underscored() -> str:
        """Named like `dotted.name` once that is made safe for the model."""
        return "underscored"

    @server.tool(name="x__echo")
    def x_echo(text: str) -> str:
        """Named like the echo tool of a server called `<this server>__x`."""
        return f"x-echo: {text}"

    @server.tool(structured_output=False)
    def picture() -> list[object]:
        """Return a caption and an image."""
        return ["a red pixel", Image(data=PIXEL, format="png")]

    @server.tool()
    def arguments(note: str = "", session_id: str | None = None) -> str:
        """Return the arguments the server received."""
        return json.dumps({"note": note, "session_id": session_id})

    @server.tool()
    def env_value(name: str) -> str:
        """Return one environment variable of the server process."""
        return os.environ.get(name, "<unset>")

    @server.tool()
    def append(line: str) -> str:
        """Append a line to the file named by DEMO_APPEND_FILE (a tool with a side effect)."""
        with open(os.environ["DEMO_APPEND_FILE"], "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        return f"appended: {line}"

    @server.tool()
    def nothing() -> str:
        """Answer with empty text."""
        return ""

    @server.tool()
    def grow() -> str:
        """Add a tool named `grown` to this server."""

        def grown() -> str:
            """Added while connected."""
            return "grown"

        server.add_tool(grown)
        return "added"

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    return server


def build_legacy_server() -> MCPServer:
    """The demo server without `server/discover`: clients must use the 2025 handshake."""
    server = build_server()
    # The SDK has no switch for this; dropping the handler is what a 2025-era server looks like.
    server._lowlevel_server._request_handlers.pop("server/discover")
    return server


if __name__ == "__main__":
    build_server().run("stdio")
