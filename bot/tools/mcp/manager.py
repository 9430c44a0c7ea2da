"""External tools over MCP: configured servers' tools join the registry, namespaced by server."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import re
from collections.abc import Callable
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from bot.config import SECRET_KEYS, Settings
from bot.errors import ToolError
from bot.llm.types import ToolSchema
from bot.store.repos.api_logs import ApiLogRepository
from bot.tools.core import Tool, ToolDisplay, ToolRegistry
from bot.tools.mcp.client import (
    McpConnection,
    McpTuning,
    McpUnavailableError,
    RemoteTool,
)
from bot.tools.mcp.config import (
    McpConfigError,
    McpServerConfig,
    load_mcp_config,
    server_prefix,
)
from bot.tools.mcp.metadata import (
    MAX_SERVER_SCHEMA_BYTES,
    offered_size,
    shown_name,
    vet_tool,
)
from bot.tools.mcp.status import KnownTool, ReloadReport, ServerStatus
from bot.utils.durations import elapsed_ms, loop_now
from bot.utils.redact import Redactor

log = logging.getLogger(__name__)

MAX_TOOL_NAME = 64
SEPARATOR = "__"
STARTUP_WAIT = 5.0
# The registry's own deadline is only a backstop: ours fires first, so the call gets logged.
_REGISTRY_GRACE = 5.0
_LOG_CHARS = 4000
_REFUSED_SHOWN = 5
_HASH_CHARS = 8


def _hashed(base: str, server: str, tool: str) -> str:
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_CHARS]
    return f"{base[: MAX_TOOL_NAME - _HASH_CHARS - 1]}_{digest}"


def mcp_tool_name(server: str, tool: str) -> str:
    """The registry name of `tool` on `server`: `<server>__<tool>`, [A-Za-z0-9_-], ≤ 64 chars."""
    base = f"{server_prefix(server)}{SEPARATOR}{re.sub(r'[^A-Za-z0-9_-]', '_', tool)}"
    return base if len(base) <= MAX_TOOL_NAME else _hashed(base, server, tool)


def result_text(result: CallToolResult) -> str:
    """An MCP tool result as text for the model: text joined, other content summarised."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image omitted: {block.mime_type}]")
        elif isinstance(block, AudioContent):
            parts.append(f"[audio omitted: {block.mime_type}]")
        elif isinstance(block, ResourceLink):
            parts.append(f"[resource link: {block.name} {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                parts.append(resource.text)
            elif isinstance(resource, BlobResourceContents):
                parts.append(f"[binary resource omitted: {resource.uri}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return "\n".join(parts)


def _schema(name: str, tool: RemoteTool) -> ToolSchema:
    parameters = tool.input_schema or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": name, "description": tool.description, "parameters": parameters},
    }


class McpManager:
    """Connects the configured MCP servers and keeps their tools in the registry."""

    def __init__(
        self,
        registry: ToolRegistry,
        settings: Callable[[], Settings],
        api_logs: ApiLogRepository | None = None,
        *,
        tuning: McpTuning | None = None,
        startup_wait: float = STARTUP_WAIT,
    ) -> None:
        self._registry = registry
        self._settings = settings
        self._logs = api_logs
        self._tuning = tuning or McpTuning()
        self._startup_wait = startup_wait
        self._connections: dict[str, McpConnection] = {}
        # registry name -> (server, remote tool name), for every MCP tool currently offered
        self._owners: dict[str, tuple[str, str]] = {}
        # server -> "tool (why)" for each listed tool that is not offered to the model
        self._refused: dict[str, list[str]] = {}
        # server -> the tools it last offered (name, description), kept while it is down
        self._known: dict[str, list[KnownTool]] = {}
        self._changed = asyncio.Event()
        # One reload or reconnect at a time: each replaces connections.
        self._reloading = asyncio.Lock()
        self.config_error: str | None = None

    async def _read_config(self) -> list[McpServerConfig] | None:
        """The configured servers; None (and `config_error` set) when the file is unusable."""
        path = self._settings().mcp_config
        if path is None:
            self.config_error = "MCP_CONFIG is not set"
            return None
        try:
            configs = await asyncio.to_thread(load_mcp_config, path)
        except McpConfigError as exc:
            self.config_error = str(exc)
            log.error("MCP disabled: %s", exc)
            return None
        except Exception as exc:
            # Whatever the file holds, the bot starts; the traceback shows what went wrong.
            self.config_error = f"the MCP config could not be read ({type(exc).__name__})"
            log.exception("MCP disabled: the config could not be read")
            return None
        self.config_error = None
        return configs

    def _connect(self, config: McpServerConfig) -> McpConnection:
        """A started connection to `config`'s server, in place of any before it."""
        if config.error is not None:
            log.error("MCP server %s ignored: %s", config.name, config.error)
        connection = McpConnection(
            config,
            on_tools=functools.partial(self._publish, config.name),
            on_down=functools.partial(self._withdraw, config.name),
            on_state=self._notify,
            tuning=self._tuning,
        )
        self._connections[config.name] = connection
        connection.start()
        return connection

    async def _disconnect(self, name: str) -> None:
        """Stop one server (a stdio server's process ends) and forget its tools."""
        connection = self._connections.pop(name)
        await connection.close()
        self._withdraw(name, forget=True)

    async def _first_attempts(self, connections: list[McpConnection]) -> None:
        """Wait at most `startup_wait` s for each connection's first attempt to end."""
        waits = [asyncio.create_task(c.first_attempt.wait()) for c in connections]
        if waits:
            _, pending = await asyncio.wait(waits, timeout=self._startup_wait)
            for waiter in pending:
                waiter.cancel()

    async def start(self) -> None:
        """Read the config and connect every enabled server; waits at most `startup_wait` s."""
        if self._settings().mcp_config is None or self._connections:
            return
        configs = await self._read_config()
        await self._first_attempts([self._connect(config) for config in configs or ()])

    async def reload(self) -> ReloadReport:
        """Re-read MCP_CONFIG without a restart: new servers start, removed ones stop, changed
        ones restart, the rest stay connected. An unusable file changes nothing."""
        async with self._reloading:
            configs = await self._read_config()
            if configs is None:
                return ReloadReport(error=self.config_error)
            wanted = {config.name: config for config in configs}
            removed = [name for name in self._connections if name not in wanted]
            changed = [
                name
                for name, config in wanted.items()
                if name in self._connections and self._connections[name].config != config
            ]
            added = [name for name in wanted if name not in self._connections]
            for name in removed + changed:
                await self._disconnect(name)
            started = [self._connect(wanted[name]) for name in changed + added]
            await self._first_attempts(started)
            unchanged = [n for n in wanted if n not in changed and n not in added]
            log.info(
                "MCP config reloaded: %d added, %d removed, %d restarted",
                len(added),
                len(removed),
                len(changed),
            )
            self._notify()
            return ReloadReport(added, removed, changed, unchanged)

    async def reconnect(self, name: str) -> bool:
        """Drop one server's connection and connect again (a stdio server is restarted)."""
        async with self._reloading:
            connection = self._connections.get(name)
            if connection is None:
                return False
            await self._disconnect(name)
            await self._first_attempts([self._connect(connection.config)])
            return True

    def known_tools(self) -> list[KnownTool]:
        """Every tool the configured servers offered, also while their server is down."""
        return [tool for name in self._connections for tool in self._known.get(name, ())]

    async def close(self) -> None:
        """Disconnect every server (stdio servers are stopped) and withdraw their tools."""
        await asyncio.gather(*(c.close() for c in self._connections.values()))
        for server in list(self._connections):
            self._withdraw(server)

    def status(self) -> list[ServerStatus]:
        """Every configured server: its state, last error and the tools it offers."""
        result = []
        for name, connection in self._connections.items():
            config = connection.config
            result.append(
                ServerStatus(
                    name=name,
                    transport=config.transport,
                    target=config.target,
                    state="down" if config.error else connection.state,
                    error=f"invalid configuration: {config.error}"
                    if config.error
                    else connection.error or self._refusal(name),
                    tools=sorted(n for n, (s, _) in self._owners.items() if s == name),
                    connects=connection.connects,
                    protocol=connection.protocol,
                )
            )
        return result

    async def wait_for(
        self, predicate: Callable[[list[ServerStatus]], bool], *, within: float
    ) -> list[ServerStatus]:
        """Wait until `predicate(status())` holds; raises TimeoutError after `within` s."""
        async with asyncio.timeout(within):
            while not predicate(self.status()):
                await self._changed.wait()
        return self.status()

    def _refusal(self, server: str) -> str | None:
        """A status line naming the listed tools that are not offered, and why."""
        refused = self._refused.get(server)
        if not refused:
            return None
        shown = "; ".join(refused[:_REFUSED_SHOWN])
        more = len(refused) - _REFUSED_SHOWN
        tail = f"; and {more} more" if more > 0 else ""
        return f"{len(refused)} tool(s) not offered: {shown}{tail}"

    def _notify(self) -> None:
        # Wake current waiters; later waiters wait on a fresh event.
        self._changed.set()
        self._changed = asyncio.Event()

    def _free_name(self, server: str, tool: str, taken: set[str]) -> str | None:
        """A registry name for `tool` that shadows nothing (None if even the hashed one clashes)."""
        name = mcp_tool_name(server, tool)
        for candidate in (name, _hashed(name, server, tool)):
            held_elsewhere = candidate in self._registry and self._owners.get(candidate) != (
                server,
                tool,
            )
            if candidate not in taken and not held_elsewhere:
                if candidate != name:
                    log.warning(
                        "MCP tool %s of %s renamed to %s (name clash)", tool, server, candidate
                    )
                return candidate
        return None

    def _publish(self, server: str, tools: list[RemoteTool]) -> None:
        connection = self._connections[server]
        allowed = connection.config.allowed_tools
        if allowed is not None:
            missing = allowed - {tool.name for tool in tools}
            if missing:
                log.warning("MCP server %s has no tool(s) %s", server, ", ".join(sorted(missing)))
        offered = [tool for tool in tools if allowed is None or tool.name in allowed]
        previous = {n for n, (s, _) in self._owners.items() if s == server}
        kept: set[str] = set()
        refused: list[str] = []
        budget = MAX_SERVER_SCHEMA_BYTES
        for listed in sorted(offered, key=lambda item: item.name):
            vetted = vet_tool(server, listed)
            tool = vetted.tool
            if tool is None:
                refused.append(f"{shown_name(listed.name)} ({vetted.problem})")
                continue
            name = self._free_name(server, tool.name, kept)
            if name is None:
                refused.append(f"{shown_name(tool.name)} (name clash)")
                continue
            size = offered_size(name, tool)
            if size > budget:
                refused.append(
                    f"{shown_name(tool.name)} (the server's tools would pass "
                    f"{MAX_SERVER_SCHEMA_BYTES:,} bytes together)"
                )
                continue
            try:
                self._registry.add(self._tool(server, name, tool))
            except ValueError as exc:
                refused.append(f"{shown_name(tool.name)} ({exc})")
                continue
            budget -= size
            self._owners[name] = (server, tool.name)
            kept.add(name)
        for name in previous - kept:
            self._registry.remove(name)
            self._owners.pop(name, None)
        self._known[server] = [
            KnownTool(name, server, str(registered.schema["function"].get("description", "")))
            for name in sorted(kept)
            if (registered := self._registry.get(name)) is not None
        ]
        self._refused[server] = refused
        if refused:
            log.warning("MCP server %s: %s", server, self._refusal(server) or "tools not offered")
        self._notify()

    def _withdraw(self, server: str, *, forget: bool = False) -> None:
        for name, (owner, _) in list(self._owners.items()):
            if owner == server:
                self._registry.remove(name)
                del self._owners[name]
        self._refused.pop(server, None)
        if forget:
            self._known.pop(server, None)
        self._notify()

    def _tool(self, server: str, name: str, remote: RemoteTool) -> Tool:
        config = self._connections[server].config
        timeout = config.timeout or self._settings().mcp_call_timeout

        async def handler(session_id: str | None = None, **arguments: Any) -> str:
            return await self._invoke(server, remote.name, name, arguments, session_id)

        return Tool(
            name=name,
            handler=handler,
            schema=_schema(name, remote),
            timeout=timeout + _REGISTRY_GRACE,
            injected=frozenset({"session_id"}),
            validator=None,
            source=f"mcp:{server}",
            display=ToolDisplay(label=lambda _args: f"{remote.name} ({server})"),
            confirm="always" if config.confirm else "never",
        )

    async def _invoke(
        self,
        server: str,
        tool: str,
        name: str,
        arguments: dict[str, Any],
        session_id: str | None,
    ) -> str:
        connection = self._connections[server]
        timeout = connection.config.timeout or self._settings().mcp_call_timeout
        started = loop_now()
        text: str | None = None
        error: str | None = None
        # What went wrong, without server-supplied text (that may quote the conversation).
        outcome = "done"
        try:
            result = await connection.call(tool, arguments, deadline=timeout)
        except TimeoutError:
            error = f"MCP tool {name} timed out after {timeout:g} s"
            outcome = "timed out"
        except McpUnavailableError as exc:
            error = str(exc)
            outcome = "server unavailable"
        except MCPError as exc:
            error = f"MCP server {server} refused the call: {exc.message}"
            outcome = f"refused (MCP error {exc.code})"
        except Exception as exc:
            error = f"MCP tool {name} failed: {type(exc).__name__}: {exc}"
            outcome = f"failed ({type(exc).__name__})"
        else:
            text = result_text(result)
            if result.is_error:
                error = text.strip() or f"MCP tool {name} reported an error"
                outcome = "tool reported an error"
        latency_ms = elapsed_ms(started)
        level = logging.INFO if error is None else logging.WARNING
        log.log(level, "MCP %s.%s %s in %d ms", server, tool, outcome, latency_ms)
        await self._log_call(
            connection.config,
            tool,
            arguments,
            session_id=session_id,
            text=text,
            error=error,
            latency_ms=latency_ms,
        )
        if error is not None:
            raise ToolError(error, as_json=True)
        return text or "(no output)"

    async def _log_call(
        self,
        config: McpServerConfig,
        tool: str,
        arguments: dict[str, Any],
        *,
        session_id: str | None,
        text: str | None,
        error: str | None,
        latency_ms: int,
    ) -> None:
        if self._logs is None:
            return
        settings = self._settings()
        redact = Redactor([*(settings.secret(key) for key in SECRET_KEYS), *config.secrets])
        request = json.dumps(
            {"server": config.name, "tool": tool, "arguments": arguments},
            ensure_ascii=False,
            default=str,
        )
        response = None if text is None else redact(text[:_LOG_CHARS])
        try:
            await self._logs.add(
                session_id=session_id,
                model=f"mcp:{config.name}",
                purpose="mcp",
                request_json=redact(request),
                response_text=response,
                error=None if error is None else redact(error),
                latency_ms=latency_ms,
            )
        except Exception:
            log.exception("could not write the MCP api log")
