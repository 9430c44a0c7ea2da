"""One MCP server connection: connect, watch, reconnect with backoff, and calls from any task."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types
from mcp import Client, StdioServerParameters
from mcp.client.session import IncomingMessage
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, CallToolResult, Implementation

from bot.tools.mcp.config import McpServerConfig
from bot.tools.mcp.status import ConnectionState

log = logging.getLogger(__name__)

CLIENT_INFO = Implementation(name="playchat", version="1")
_LIST_PAGE_CAP = 50
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class McpUnavailableError(Exception):
    """The server is not connected, or the connection was lost during the call."""


@dataclass(frozen=True)
class McpTuning:
    """Timing of connections; tests shorten it, production uses the defaults."""

    connect_timeout: float = 15.0
    heartbeat_interval: float = 30.0
    backoff_initial: float = 1.0
    backoff_max: float = 60.0


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the MCP server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class _Link:
    """Signals of one connection attempt; a late signal of an old one cannot reach a new one."""

    wake: asyncio.Event = field(default_factory=asyncio.Event)
    dropped: bool = False

    def drop(self) -> None:
        """The connection is gone: stop watching it."""
        self.dropped = True
        self.wake.set()

    async def on_message(self, message: IncomingMessage) -> None:
        """A server notice; a changed tool list is re-read at once."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.wake.set()


@dataclass
class _Request:
    tool: str
    arguments: dict[str, Any]
    future: asyncio.Future[CallToolResult]
    scope: anyio.CancelScope


def describe_error(exc: BaseException) -> str:
    """A one-line description of a connection failure (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, MCPError):
        return f"MCP error {exc.code}: {exc.message}"
    if isinstance(exc, FileNotFoundError):
        return f"not found: {exc.filename or exc}"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _WatchedReadStream:
    """The transport's read stream; reports its end so a dead server is noticed at once."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item (the SDK reads it when present)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        """Next message; the end of the stream is reported before it propagates."""
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        return item

    async def aclose(self) -> None:
        """Close the inner stream."""
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedReadStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def _transport(config: McpServerConfig, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """The SDK transport for `config`, its read stream watched for the end of the connection."""
    async with AsyncExitStack() as stack:
        if config.transport == "stdio":
            params = StdioServerParameters(
                command=config.command or "",
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
            )
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=config.headers or None, timeout=_HTTP_TIMEOUT)
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(config.url or "", http_client=http)
            )
        yield _WatchedReadStream(read, on_end), write


async def list_remote_tools(client: Client) -> list[RemoteTool]:
    """Every tool the server offers (all pages)."""
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(_LIST_PAGE_CAP):
        page = await client.list_tools(cursor=cursor)
        tools.extend(
            RemoteTool(tool.name, tool.description or "", dict(tool.input_schema))
            for tool in page.tools
        )
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


class McpConnection:
    """Keeps one server connected in its own task; `call()` may be used from any task."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        on_tools: Callable[[list[RemoteTool]], None],
        on_down: Callable[[], None],
        on_state: Callable[[], None] = lambda: None,
        tuning: McpTuning | None = None,
    ) -> None:
        self.config = config
        self._on_tools = on_tools
        self._on_down = on_down
        self._on_state = on_state
        self._tuning = tuning or McpTuning()
        self.state: ConnectionState = "disabled" if not config.enabled else "connecting"
        self.error: str | None = config.error
        self._task: asyncio.Task[None] | None = None
        self._client: Client | None = None
        self._workers: anyio.abc.TaskGroup | None = None
        self._link = _Link()
        self._closing = False
        self._was_connected = False
        self.connects = 0
        self.protocol: str | None = None
        self.first_attempt = asyncio.Event()
        if not config.enabled:
            self.first_attempt.set()

    @property
    def name(self) -> str:
        """The configured server name."""
        return self.config.name

    def start(self) -> None:
        """Start the connection task (no-op for a disabled or invalid server)."""
        if self.config.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"mcp-{self.config.name}"
            )

    async def close(self, grace: float = 8.0) -> None:
        """Disconnect (stopping a stdio server) and stop reconnecting."""
        self._closing = True
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            log.warning("MCP server %s did not shut down within %.0fs", self.name, grace)

    @property
    def closing(self) -> bool:
        """True once close() was called: no more reconnecting."""
        return self._closing

    def _set_state(self, state: ConnectionState, error: str | None = None) -> None:
        self.state = state
        self.error = error
        self._on_state()

    async def _run(self) -> None:
        delay = self._tuning.backoff_initial
        while not self._closing:
            self._set_state("connecting", self.error)
            self._was_connected = False
            try:
                await self._connect_once()
                error = "connection lost"
            except Exception as exc:
                error = describe_error(exc)
            finally:
                self._client = None
                self._workers = None
                self._on_down()
            if self.closing:
                return
            if self._was_connected:
                delay = self._tuning.backoff_initial
            log.warning("MCP server %s is down (%s); retrying in %.1fs", self.name, error, delay)
            self._set_state("down", error)
            self.first_attempt.set()
            await asyncio.sleep(delay * (0.75 + random.random() / 2))
            delay = min(self._tuning.backoff_max, delay * 2)

    async def _connect_once(self) -> None:
        """One connection's life: returns (or raises) when it ends or cannot be made."""
        link = self._link = _Link()
        async with AsyncExitStack() as stack:
            async with asyncio.timeout(self._tuning.connect_timeout):
                client = await stack.enter_async_context(
                    Client(
                        _transport(self.config, link.drop),
                        cache=None,
                        client_info=CLIENT_INFO,
                        message_handler=link.on_message,
                    )
                )
                tools = await list_remote_tools(client)
            self._on_tools(tools)
            log.info("MCP server %s connected (%d tools)", self.name, len(tools))
            async with anyio.create_task_group() as workers:
                self._client = client
                self._workers = workers
                self._was_connected = True
                self.connects += 1
                self.protocol = client.protocol_version
                self._set_state("connected")
                self.first_attempt.set()
                try:
                    await self._watch(client, link, tools)
                finally:
                    self._client = None
                    self._workers = None
                    workers.cancel_scope.cancel()

    async def _watch(self, client: Client, link: _Link, tools: list[RemoteTool]) -> None:
        """Until the connection drops: re-list tools on change notices and every heartbeat."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._tuning.heartbeat_interval):
                    await link.wake.wait()
            link.wake.clear()
            if link.dropped:
                return
            try:
                async with asyncio.timeout(self._tuning.connect_timeout):
                    listed = await list_remote_tools(client)
            except Exception as exc:
                log.warning(
                    "MCP server %s failed its heartbeat: %s", self.name, describe_error(exc)
                )
                return
            if listed != tools:
                log.info("MCP server %s changed its tools (%d now)", self.name, len(listed))
                tools = listed
                self._on_tools(tools)

    async def call(
        self, tool: str, arguments: dict[str, Any], *, deadline: float
    ) -> CallToolResult:
        """Call `tool`, cut off after `deadline` s (McpUnavailableError, TimeoutError, MCPError)."""
        client, workers, link = self._client, self._workers, self._link
        if client is None or workers is None or self.state != "connected":
            raise McpUnavailableError(f"MCP server {self.name} is not connected")
        request = _Request(
            tool, arguments, asyncio.get_running_loop().create_future(), anyio.CancelScope()
        )
        try:
            workers.start_soon(self._serve, client, link, request)
        except RuntimeError:
            raise McpUnavailableError(f"MCP server {self.name} is not connected") from None
        try:
            async with asyncio.timeout(deadline):
                return await request.future
        finally:
            # Stops the remote call when the deadline passed or the turn was cancelled.
            request.scope.cancel()

    async def _serve(self, client: Client, link: _Link, request: _Request) -> None:
        """Run one call inside the connection's task group, where the SDK expects it."""
        future = request.future
        try:
            with request.scope:
                result = await client.call_tool(request.tool, request.arguments)
                if not future.done():
                    future.set_result(result)
        except MCPError as exc:
            failure: Exception = exc
            if exc.code == CONNECTION_CLOSED:
                link.drop()
                failure = McpUnavailableError(f"lost the connection to MCP server {self.name}")
            if not future.done():
                future.set_exception(failure)
        except Exception as exc:
            if not future.done():
                future.set_exception(exc)
        finally:
            if not future.done():
                future.set_exception(
                    McpUnavailableError(f"lost the connection to MCP server {self.name}")
                )
