"""The first turn after `python -m bot` is ready loads nothing: everything a turn needs was
imported during start-up (off the event loop or before ready), none of it on the first message."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.bot_process import bot_env, spawn_entry
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.sharding.processes import BotProcess

REPLY = "Answered from a warm start."
START = 60.0
# The real entry point pointed at the loopback Discord; from `on_ready` on, every module
# imported is logged (the audit hook sees each first import, not the ones already loaded).
ENTRY = """
import json, sys, yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route
Route.BASE = sys.argv[1]
DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(sys.argv[2])
import bot.bot
def after_ready(event, args):
    if event == "import":
        print("imported after ready: " + json.dumps(args[0]), file=sys.stderr, flush=True)
ready = bot.bot.PlayChatBot.on_ready
async def on_ready(self):
    await ready(self)
    sys.addaudithook(after_ready)
    print("ready: imports are watched", file=sys.stderr, flush=True)
bot.bot.PlayChatBot.on_ready = on_ready
from bot.__main__ import main
sys.exit(main([]))
"""


@pytest.mark.sqlite_only(reason="the child process opens its own DB_PATH file")
async def test_the_first_turn_after_start_imports_nothing(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    llm.default_reply = Text(REPLY)
    async with FakeDiscord() as server:
        env = bot_env(
            tmp_path / "bot.db",
            DISCORD_TOKEN=server.token,
            ADMIN_ENABLED="false",
            LLM_MODEL="ollama/test-model",
            LLM_API_BASE=llm.url,
            USER_COOLDOWN_SECONDS="0",
            LOG_LEVEL="INFO",
        )
        process = await spawn_entry(ENTRY, server.api_url, server.gateway_url, env, tmp_path)
        running = BotProcess(process)
        try:
            await running.wait_for_log(r"ready: imports are watched", START)
            message = await server.inject_message("hello there")
            await server.wait_for(
                lambda: any(m.content == REPLY for m in server.messages_in(message.id)), START
            )
        finally:
            await running.stop()
        log = running.stderr
    # Not during the turn, nor in the background work after it, nor on the way out.
    watched = log.index("ready: imports are watched")
    imported = [json.loads(name) for name in re.findall(r"imported after ready: (.*)", log)]
    assert imported == [], (imported, log[watched:][-3000:])
