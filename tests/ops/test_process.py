"""`python -m bot` against an unreachable model and the loopback Discord: one warning naming
the address and LLM_API_BASE, the readiness endpoint says so, and so does the bot's presence."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import aiohttp

from bot.prompts.ui_text import ui_text
from tests.bot_process import bot_env, spawn_entry
from tests.fakes.discord_server import FakeDiscord
from tests.ops.conftest import closed_port

TOKEN = "readiness-token-0123456789"
# The real entry point, with discord.py pointed at the loopback server first.
ENTRY = """
import sys, yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route
Route.BASE = sys.argv[1]
DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(sys.argv[2])
from bot.__main__ import main
sys.exit(main([]))
"""


async def _readiness(url: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{url}/api/readiness", headers=headers) as reply,
    ):
        assert reply.status == 200
        body: dict[str, Any] = await reply.json()
        return body


async def test_an_unreachable_model_is_warned_once_reported_and_shown(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    admin_port = closed_port()
    async with FakeDiscord() as server:
        env = bot_env(
            tmp_path / "p.db",
            DISCORD_TOKEN=server.token,
            DISCORD_GUILD_IDS=str(server.guild_id),
            LLM_API_BASE=base,
            LLM_MODEL="ollama/qwen3:8b",
            ADMIN_PORT=str(admin_port),
            ADMIN_TOKEN=TOKEN,
        )
        process = await spawn_entry(ENTRY, server.api_url, server.gateway_url, env, tmp_path)
        try:
            presence = await server.wait_for(
                lambda: server.gateway.presences[-1] if server.gateway.presences else None,
                timeout=30,
            )
            body = await _readiness(f"http://127.0.0.1:{admin_port}")
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = await asyncio.wait_for(process.communicate(), 30)
    log = err.decode()
    assert process.returncode == 0, log
    assert presence["status"] == "idle"
    assert [a["state"] for a in presence["activities"]] == [ui_text("en").presence_model_down]
    sentence = (
        f"The model server at {base} is not reachable (connection refused); start Ollama or "
        "set LLM_API_BASE."
    )
    warnings = [line for line in log.splitlines() if " WARNING " in line]
    mine = [line for line in warnings if " bot.ops." in line]
    assert len(mine) == 1 and mine[0].endswith(f"WARNING bot.ops.readiness: {sentence}"), log
    assert sum(sentence in line for line in warnings) == 1, log
    model = next(c for c in body["components"] if c["name"] == "model")
    assert (model["state"], model["detail"]) == ("down", sentence)
    assert body["status"] == "down"
    discord_part = next(c for c in body["components"] if c["name"] == "discord")
    assert discord_part["state"] == "ok" and discord_part["facts"]["servers"] == 1
    scheduler = next(c for c in body["components"] if c["name"] == "scheduler")
    assert scheduler["state"] == "ok"
    assert "Traceback" not in log
