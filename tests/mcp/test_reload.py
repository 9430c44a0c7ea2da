"""Reloading MCP_CONFIG and reconnecting servers through the real admin API, with real MCP
servers (the demo script as a stdio subprocess, the demo over loopback HTTP)."""

from __future__ import annotations

import os
from typing import Any

from bot.tools.mcp.manager import McpManager
from tests.admin_api.conftest import Admin, StartAdmin, sse_events, start_admin  # noqa: F401
from tests.fakes.llm_server import Text
from tests.mcp.conftest import ConfigWriter, server, stdio_entry, wait_server
from tests.mcp.servers.loopback_http import McpHttpServer


def tools_by_name(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in listing["tools"]}


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def pid_of(admin: Admin, server_name: str) -> int:
    result = await admin.services.registry.execute(f"{server_name}__pid", {})
    return int(result.text)


async def test_reload_starts_new_servers_stops_removed_and_restarts_changed(
    start_admin: StartAdmin,  # noqa: F811
    write_config: ConfigWriter,
) -> None:
    config = write_config({"one": stdio_entry()})
    admin = await start_admin(mcp_config=config)
    manager = admin.services.mcp
    assert isinstance(manager, McpManager)
    listed = (await admin.get("/api/tools")).json
    assert tools_by_name(listed)["one__echo"]["state"] == "enabled"
    assert tools_by_name(listed)["one__echo"]["server"] == "one"
    assert "two__echo" not in tools_by_name(listed)

    write_config({"one": stdio_entry(), "two": stdio_entry()})
    reloaded = await admin.post("/api/mcp/reload")
    assert reloaded.status == 200, reloaded.text
    report = reloaded.json
    assert (report["added"], report["removed"], report["restarted"]) == (["two"], [], [])
    assert report["unchanged"] == ["one"] and report["error"] is None
    two = await wait_server(manager, "two", lambda s: s.state == "connected")
    assert "two__echo" in two.tools and "two__echo" in admin.services.registry
    assert tools_by_name((await admin.get("/api/tools")).json)["two__echo"]["state"] == "enabled"

    admin.llm.script(Text("Tools noted."))
    turn = await admin.post("/api/chat/stream", {"message": "what can you use?"})
    assert [e["type"] for e in sse_events(turn.text)][-1] == "done"
    offered = admin.llm.chat_requests[-1].tool_names
    assert "two__echo" in offered and "one__echo" in offered

    old_one, old_two = await pid_of(admin, "one"), await pid_of(admin, "two")
    write_config({"two": stdio_entry(env={"DEMO_SETTING": "changed"})})
    report = (await admin.post("/api/mcp/reload")).json
    assert (report["removed"], report["restarted"], report["added"]) == (["one"], ["two"], [])
    assert not process_alive(old_one), "a removed stdio server is stopped"
    assert not process_alive(old_two), "a changed server is restarted"
    await wait_server(manager, "two", lambda s: s.state == "connected")
    assert "one__echo" not in admin.services.registry
    changed = await admin.services.registry.execute("two__env_value", {"name": "DEMO_SETTING"})
    assert changed.text == "changed"
    assert [s.name for s in manager.status()] == ["two"]

    admin.llm.script(Text("Fewer tools."))
    await admin.post("/api/chat/stream", {"message": "and now?"})
    offered = admin.llm.chat_requests[-1].tool_names
    assert "two__echo" in offered and "one__echo" not in offered


async def test_reconnect_restarts_one_server_and_a_bad_file_changes_nothing(
    start_admin: StartAdmin,  # noqa: F811
    write_config: ConfigWriter,
) -> None:
    config = write_config({"one": stdio_entry()})
    admin = await start_admin(mcp_config=config)
    manager = admin.services.mcp
    assert isinstance(manager, McpManager)
    before = await pid_of(admin, "one")
    reconnected = await admin.post("/api/mcp/servers/one/reconnect")
    assert reconnected.status == 200, reconnected.text
    assert reconnected.json["name"] == "one"
    await wait_server(manager, "one", lambda s: s.state == "connected")
    after = await pid_of(admin, "one")
    assert after != before and not process_alive(before)
    assert (await admin.post("/api/mcp/servers/nobody/reconnect")).status == 404

    config.write_text("{not json", encoding="utf-8")
    report = (await admin.post("/api/mcp/reload")).json
    assert report["error"] and report["added"] == report["removed"] == []
    assert server(manager, "one").state == "connected" and process_alive(after)
    listed = (await admin.get("/api/tools")).json
    assert listed["mcp_config_error"] == report["error"]


async def test_tools_of_a_server_that_went_down_are_listed_as_such(
    start_admin: StartAdmin,  # noqa: F811
    write_config: ConfigWriter,
    http_server: McpHttpServer,
) -> None:
    config = write_config({"web": {"url": http_server.url}})
    admin = await start_admin(mcp_config=config)
    manager = admin.services.mcp
    assert isinstance(manager, McpManager)
    await wait_server(manager, "web", lambda s: s.state == "connected")
    await http_server.stop()
    await wait_server(manager, "web", lambda s: s.state == "down")
    listed = (await admin.get("/api/tools")).json
    echo = tools_by_name(listed)["web__echo"]
    assert (echo["state"], echo["source"]) == ("server_down", "mcp:web")
    assert echo["description"]
    assert "web__echo" not in admin.services.registry
    (web,) = listed["mcp_servers"]
    assert web["state"] == "down" and web["error"]


async def test_without_mcp_config_reload_says_why(start_admin: StartAdmin) -> None:  # noqa: F811
    admin = await start_admin()
    report = (await admin.post("/api/mcp/reload")).json
    assert report["error"] and "MCP_CONFIG" in report["error"]
    assert (await admin.post("/api/mcp/servers/x/reconnect")).status == 404
