"""The MCP server list: the common `{"mcpServers": {...}}` JSON file, validated per server."""

from __future__ import annotations

import json
import logging
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

log = logging.getLogger(__name__)

Transport = Literal["stdio", "http"]

MAX_CONFIG_BYTES = 1_000_000
# Real configs nest four or five levels; the JSON decoder recurses per level and would raise
# RecursionError (not a decode error) somewhere near a thousand.
MAX_CONFIG_DEPTH = 32
MAX_SERVERS = 100
# Strings (skipped whole, escapes included) and the brackets that open and close nesting.
_JSON_NESTING_RE = re.compile(r'"(?:[^"\\]++|\\.)*+"|[\[\]{}]', re.DOTALL)
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamable_http", "streamablehttp"})
_UNSUPPORTED_TYPES = frozenset({"sse", "websocket", "ws"})


class McpConfigError(ValueError):
    """The MCP config file cannot be used at all (missing, not JSON, wrong shape)."""


@dataclass(frozen=True)
class McpServerConfig:
    """One configured MCP server; `error` is set when its entry is invalid (never connected)."""

    name: str
    transport: Transport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    allowed_tools: frozenset[str] | None = None
    timeout: float | None = None
    # Every call of the server's tools waits for its member's Allow / Deny first.
    confirm: bool = False
    error: str | None = None

    @property
    def target(self) -> str:
        """What it connects to, safe to show (no env, no headers, no URL credentials or query)."""
        if self.transport == "stdio":
            return " ".join([self.command or "", *self.args]).strip()[:200]
        if not self.url:
            return ""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    @property
    def secrets(self) -> list[str]:
        """Values that must never reach a log: environment and header values."""
        return [*self.env.values(), *self.headers.values()]


class _Entry(BaseModel):
    """One `mcpServers` entry as written by the owner (common keys plus ours)."""

    model_config = ConfigDict(extra="allow", strict=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    type: str | None = None
    transport: str | None = None
    enabled: bool = True
    disabled: bool = False
    allowed_tools: list[str] | None = None
    timeout: float | None = Field(default=None, gt=0, le=3600)
    confirm: bool = False


def server_prefix(name: str) -> str:
    """A server name as it appears in tool names: only [A-Za-z0-9_-]."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name.strip())


def _pydantic_message(exc: PydanticValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or 'entry'}: {err['msg']}"
        for err in exc.errors()
    )


def _entry_problem(entry: _Entry) -> tuple[Transport, str | None]:
    """The transport an entry selects, and what is wrong with it (None when usable)."""
    kind = (entry.type or entry.transport or "").strip().lower()
    if kind in _UNSUPPORTED_TYPES:
        return "http", f"transport {kind!r} is not supported (use stdio or streamable HTTP)"
    if entry.command is not None and entry.url is not None:
        return "stdio", 'give either "command" or "url", not both'
    if entry.url is not None:
        if kind and kind not in _HTTP_TYPES:
            return "http", f'type {kind!r} does not match "url"'
        parts = urlsplit(entry.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return "http", "url must be an absolute http:// or https:// URL"
        return "http", None
    if entry.command is not None:
        if kind and kind != "stdio":
            return "stdio", f'type {kind!r} does not match "command"'
        if not entry.command.strip():
            return "stdio", "command is empty"
        return "stdio", None
    return "stdio", 'needs "command" (stdio) or "url" (streamable HTTP)'


def _server(name: str, raw: Any, prefixes: dict[str, str]) -> McpServerConfig:
    """One validated server entry; problems are recorded in `error`, never raised."""
    if not name.strip():
        return McpServerConfig(name=name, transport="stdio", enabled=False, error="empty name")
    if not server_prefix(name).strip("_-"):
        return McpServerConfig(
            name=name, transport="stdio", enabled=False, error="name needs a letter or a digit"
        )
    prefix = server_prefix(name)
    if prefix in prefixes:
        return McpServerConfig(
            name=name,
            transport="stdio",
            enabled=False,
            error=f"name clashes with server {prefixes[prefix]!r} once reduced to {prefix!r}",
        )
    prefixes[prefix] = name
    if not isinstance(raw, dict):
        return McpServerConfig(
            name=name, transport="stdio", enabled=False, error="entry must be a JSON object"
        )
    try:
        entry = _Entry.model_validate(raw)
    except PydanticValidationError as exc:
        return McpServerConfig(
            name=name, transport="stdio", enabled=False, error=_pydantic_message(exc)
        )
    if entry.model_extra:
        log.warning(
            "MCP server %s: unknown key(s) ignored: %s", name, ", ".join(sorted(entry.model_extra))
        )
    transport, problem = _entry_problem(entry)
    return McpServerConfig(
        name=name,
        transport=transport,
        command=entry.command,
        args=tuple(entry.args),
        env=dict(entry.env),
        cwd=entry.cwd,
        url=entry.url,
        headers=dict(entry.headers),
        enabled=entry.enabled and not entry.disabled and problem is None,
        allowed_tools=None if entry.allowed_tools is None else frozenset(entry.allowed_tools),
        timeout=entry.timeout,
        confirm=entry.confirm,
        error=problem,
    )


def parse_mcp_config(data: Any) -> list[McpServerConfig]:
    """Servers of a decoded config document; raises McpConfigError when its shape is wrong."""
    if not isinstance(data, dict):
        raise McpConfigError("the MCP config must be a JSON object")
    servers = data.get("mcpServers", data.get("mcp_servers"))
    if servers is None:
        raise McpConfigError('the MCP config has no "mcpServers" object')
    if not isinstance(servers, dict):
        raise McpConfigError('"mcpServers" must be an object mapping names to servers')
    if len(servers) > MAX_SERVERS:
        raise McpConfigError(
            f"the MCP config lists {len(servers)} servers; at most {MAX_SERVERS} are supported"
        )
    prefixes: dict[str, str] = {}
    return [_server(str(name), raw, prefixes) for name, raw in servers.items()]


def _too_deep(text: str) -> bool:
    """True when brackets outside strings nest deeper than MAX_CONFIG_DEPTH."""
    depth = 0
    for match in _JSON_NESTING_RE.finditer(text):
        mark = match.group()
        if mark in ("[", "{"):
            depth += 1
            if depth > MAX_CONFIG_DEPTH:
                return True
        elif mark in ("]", "}"):
            depth -= 1
    return False


def _has_lone_surrogate(data: Any) -> bool:
    """True when a key or string holds a `\\ud800`-style escape that is not a character."""
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
    return False


def decode_mcp_config(raw: bytes, source: str) -> Any:
    """The JSON document in `raw`; raises McpConfigError for anything that is not usable JSON."""
    if len(raw) > MAX_CONFIG_BYTES:
        raise McpConfigError(f"MCP config file {source} is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise McpConfigError(f"MCP config file {source} is not UTF-8") from None
    if _too_deep(text):
        raise McpConfigError(
            f"MCP config file {source} nests deeper than {MAX_CONFIG_DEPTH} levels"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"MCP config file {source} is not valid JSON: {exc.msg} (line {exc.lineno})"
        ) from None
    except (ValueError, RecursionError) as exc:
        # Numbers past the int-conversion limit raise ValueError; nesting is checked above.
        raise McpConfigError(f"MCP config file {source} is not usable JSON: {exc}") from None
    if _has_lone_surrogate(data):
        raise McpConfigError(f"MCP config file {source} holds a \\u escape that is not a character")
    return data


def load_mcp_config(path: Path) -> list[McpServerConfig]:
    """Read and validate the MCP config file; raises McpConfigError with a clear reason."""
    try:
        # A FIFO or a device would block start-up on open or read, or never end.
        if not stat.S_ISREG(path.stat().st_mode):
            raise McpConfigError(f"MCP config {path} is not a regular file")
        with path.open("rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise McpConfigError(f"MCP config file not found: {path}") from None
    except OSError as exc:
        raise McpConfigError(f"cannot read MCP config file {path}: {exc.strerror}") from None
    return parse_mcp_config(decode_mcp_config(raw, str(path)))
