"""Serve an SDK-built MCP server over streamable HTTP on 127.0.0.1, in this event loop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer


class McpHttpServer:
    """Start, stop and restart (on the same port) a streamable-HTTP MCP server."""

    def __init__(self, build: Callable[[], MCPServer]) -> None:
        self._build = build
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._sockets: list[socket.socket] = []
        self._loop: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://127.0.0.1:{self.port}/mcp"

    async def start(self) -> None:
        """Listen (again on the same port after a stop) and serve a fresh server instance."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        # A new MCPServer each time: its session manager runs only once.
        app = self._build().streamable_http_app()
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
        )
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self._server, self._sockets = server, [sock]
        self._loop = asyncio.create_task(server.main_loop())

    async def stop(self) -> None:
        """Stop listening and drop every connection."""
        server, loop = self._server, self._loop
        if server is None or loop is None:
            return
        self._server = self._loop = None
        server.should_exit = True
        await loop
        await server.shutdown(sockets=self._sockets)

    async def __aenter__(self) -> McpHttpServer:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.stop()
