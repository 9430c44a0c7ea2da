"""`python -m bot` against the loopback Discord: a rejected token and a missing intent end the
process with the sentence that says what to fix, a non-zero exit code and no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.prompts.ui_text import ui_text
from tests.bot_process import bot_env, run_python
from tests.fakes.discord_server import FakeDiscord

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


async def _python_m_bot(server: FakeDiscord, tmp_path: Path, token: str) -> tuple[int, str]:
    env = bot_env(
        tmp_path / "p.db",
        DISCORD_TOKEN=token,
        ADMIN_ENABLED="false",
        LLM_API_BASE="http://127.0.0.1:9",
    )
    returncode, _, err = await run_python(
        ["-c", ENTRY, server.api_url, server.gateway_url], env, tmp_path
    )
    return returncode, err


@pytest.mark.parametrize("case", ["bad_token", "intents_disabled"])
async def test_discord_refusals_end_with_the_fix_and_no_traceback(
    tmp_path: Path, case: str
) -> None:
    privileged = 0 if case == "intents_disabled" else None
    kwargs = {} if privileged is None else {"privileged_intents": privileged}
    async with FakeDiscord(**kwargs) as server:
        token = "not-the-token" if case == "bad_token" else server.token
        code, err = await _python_m_bot(server, tmp_path, token)
    assert code == 2
    assert "Traceback" not in err, err
    expected = getattr(ui_text("en"), f"runner_{case}")
    assert expected in err, err
    assert ("DISCORD_TOKEN" if case == "bad_token" else "MESSAGE CONTENT INTENT") in expected
