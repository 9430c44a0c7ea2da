"""The MCP config file, tool naming and result conversion (pure logic, no server)."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import pytest
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from bot.tools.mcp.config import (
    MAX_CONFIG_BYTES,
    MAX_SERVERS,
    McpConfigError,
    McpServerConfig,
    load_mcp_config,
    parse_mcp_config,
)
from bot.tools.mcp.manager import MAX_TOOL_NAME, mcp_tool_name, result_text


def by_name(data: object) -> dict[str, McpServerConfig]:
    return {server.name: server for server in parse_mcp_config(data)}


def test_stdio_and_http_entries() -> None:
    servers = parse_mcp_config(
        {
            "mcpServers": {
                "files": {
                    "command": "npx",
                    "args": ["-y", "server-files", "/tmp"],
                    "env": {"TOKEN": "abcd1234"},
                    "allowed_tools": ["read_file"],
                    "timeout": 30,
                    "confirm": True,
                },
                "remote": {
                    "url": "https://user:pw@example.test:8443/mcp?key=secret",
                    "headers": {"Authorization": "Bearer xyz12345"},
                    "enabled": False,
                },
            }
        }
    )
    files, remote = servers
    assert (files.name, files.transport, files.command, files.args) == (
        "files",
        "stdio",
        "npx",
        ("-y", "server-files", "/tmp"),
    )
    assert files.env == {"TOKEN": "abcd1234"} and files.enabled and files.error is None
    assert files.allowed_tools == frozenset({"read_file"}) and files.timeout == 30.0
    assert files.confirm and not remote.confirm, "calls wait for an Allow only where asked"
    assert remote.transport == "http" and not remote.enabled and remote.error is None
    assert remote.allowed_tools is None
    assert remote.target == "https://example.test:8443/mcp", "no credentials, no query"
    assert set(remote.secrets) == {"Bearer xyz12345"} and files.secrets == ["abcd1234"]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({}, 'needs "command"'),
        ({"command": "x", "url": "http://h/mcp"}, "not both"),
        ({"url": "ftp://h/mcp"}, "http:// or https://"),
        ({"url": "http://h/sse", "type": "sse"}, "not supported"),
        ({"command": "x", "type": "http"}, "does not match"),
        ({"command": "  "}, "command is empty"),
        ({"command": "x", "args": "not-a-list"}, "args"),
        ({"command": "x", "env": {"N": 1}}, "env.N"),
        ({"command": "x", "confirm": "yes"}, "confirm"),
        ({"command": "x", "enabled": "yes"}, "enabled"),
        ({"command": "x", "timeout": 0}, "timeout"),
        ("just text", "JSON object"),
    ],
)
def test_invalid_entries_are_reported_not_raised(entry: object, problem: str) -> None:
    servers = by_name({"mcpServers": {"bad": entry, "good": {"command": "x"}}})
    bad, good = servers["bad"], servers["good"]
    assert bad.error is not None and problem in bad.error
    assert not bad.enabled
    assert good.error is None and good.enabled


def test_disabled_spellings() -> None:
    servers = by_name(
        {
            "mcpServers": {
                "a": {"command": "x", "enabled": False},
                "b": {"command": "x", "disabled": True},
                "c": {"url": "http://127.0.0.1:1/mcp", "type": "streamable-http"},
            }
        }
    )
    assert [s.enabled for s in servers.values()] == [False, False, True]


def test_crafted_server_names_cannot_clash() -> None:
    servers = by_name(
        {
            "mcpServers": {
                "": {"command": "x"},
                "...": {"command": "x"},
                "my.srv": {"command": "x"},
                "my_srv": {"command": "x"},
            }
        }
    )
    assert servers[""].error == "empty name"
    assert servers["my.srv"].error is None
    clash = servers["my_srv"].error
    assert clash is not None and "clashes with server 'my.srv'" in clash
    assert servers["..."].error == "name needs a letter or a digit"
    assert not any(s.enabled for s in (servers[""], servers["..."], servers["my_srv"]))


def test_unknown_keys_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        (server,) = parse_mcp_config({"mcpServers": {"s": {"command": "x", "allowed_tool": []}}})
    assert server.error is None and server.allowed_tools is None
    assert "allowed_tool" in caplog.text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "not found"),
        ("{not json", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"servers": {}}', 'no "mcpServers"'),
        ('{"mcpServers": []}', "must be an object"),
    ],
)
def test_unusable_files_raise_a_clear_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "mcp.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(McpConfigError, match=re.escape(message)):
        load_mcp_config(path)


DEEP = 100_000


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[" * DEEP + b"]" * DEEP, "nests deeper than 32 levels"),
        (b'{"mcpServers": ' + b'{"a": ' * DEEP + b"1" + b"}" * (DEEP + 1), "nests deeper"),
        (b'{"mcpServers": {"s": {"args": ' + b"[" * 40 + b"]" * 40 + b"}}}", "nests deeper"),
        (b'{"mcpServers": {"s": {"command": "x", "timeout": 1' + b"0" * 5000 + b"}}}", "usable"),
        (b'{"mcpServers": {"\\ud800": {"command": "x"}}}', "not a character"),
        (b'{"mcpServers": {"s": {"command": "\xff\xfe"}}}', "not UTF-8"),
        (b" " * (MAX_CONFIG_BYTES + 1), "larger than"),
        (b"", "not valid JSON"),
        (b"\x00\x01", "not valid JSON"),
    ],
    ids=[
        "deep-array",
        "deep-object",
        "deep-args",
        "huge-number",
        "lone-surrogate",
        "invalid-utf8",
        "huge-file",
        "empty",
        "binary",
    ],
)
def test_malformed_files_raise_the_configuration_error(
    tmp_path: Path, raw: bytes, message: str
) -> None:
    path = tmp_path / "mcp.json"
    path.write_bytes(raw)
    with pytest.raises(McpConfigError, match=re.escape(message)):
        load_mcp_config(path)


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    args = ["[" * 1000, "{" * 1000, '\\"[[[']
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "args": args}}}))
    (server,) = load_mcp_config(path)
    assert server.args == tuple(args) and server.error is None


def test_too_many_servers_and_files_that_are_not_files(tmp_path: Path) -> None:
    servers = {f"s{index}": {"command": "x"} for index in range(MAX_SERVERS + 1)}
    with pytest.raises(McpConfigError, match=f"at most {MAX_SERVERS} are supported"):
        parse_mcp_config({"mcpServers": servers})
    with pytest.raises(McpConfigError, match="not a regular file"):
        load_mcp_config(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(McpConfigError, match="not a regular file"):
        load_mcp_config(fifo)


def test_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"s": {"command": "run"}}}), encoding="utf-8-sig")
    assert [s.name for s in load_mcp_config(path)] == ["s"]


def test_tool_names_are_namespaced_and_sanitised() -> None:
    assert mcp_tool_name("files", "read_file") == "files__read_file"
    assert mcp_tool_name("my server", "dotted.name/x") == "my_server__dotted_name_x"
    assert mcp_tool_name("s", "web_search") == "s__web_search"
    long_a = mcp_tool_name("server", "a" * 80)
    long_b = mcp_tool_name("server", "a" * 81)
    assert len(long_a) == len(long_b) == MAX_TOOL_NAME
    assert long_a != long_b, "truncated names stay distinct"
    assert mcp_tool_name("server", "a" * 80) == long_a, "deterministic"
    assert re.fullmatch(r"[A-Za-z0-9_-]+", mcp_tool_name("日本語", "ツール"))


def test_result_text_joins_text_and_summarises_the_rest() -> None:
    result = CallToolResult(
        content=[
            TextContent(type="text", text="first"),
            ImageContent(type="image", data="AAAA", mime_type="image/png"),
            ResourceLink(type="resource_link", name="doc", uri="file:///doc.txt"),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///a.txt", text="embedded text"),
            ),
            TextContent(type="text", text="last"),
        ]
    )
    assert result_text(result) == (
        "first\n[image omitted: image/png]\n[resource link: doc file:///doc.txt]\n"
        "embedded text\nlast"
    )
    structured = CallToolResult(content=[], structured_content={"answer": 42})
    assert json.loads(result_text(structured)) == {"answer": 42}
    assert result_text(CallToolResult(content=[])) == ""
