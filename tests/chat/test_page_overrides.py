"""A value changed on the admin page beats `.env` and the environment, and says so: one INFO
line per such setting at start (secrets masked) and a line in the terminal chat's banner."""

from __future__ import annotations

from pathlib import Path

from bot.services import ServiceOptions
from tests.admin_api.conftest import admin_starter
from tests.chat.test_terminal import PtyChat
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.ops.conftest import closed_port

PAGE_KEY = "sk-page-SECRET-value-wxyz"


async def test_page_values_are_named_at_start_and_counted_in_the_banner(
    tmp_path: Path,
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> None:
    db_path = tmp_path / "chat.db"
    env_base = "http://127.0.0.1:9"
    async with admin_starter(make_settings, service_options, llm) as start:
        admin = await start(db_path=db_path, llm_api_base=f"http://127.0.0.1:{closed_port()}")
        reply = await admin.put(
            "/api/settings", {"values": {"llm_api_base": llm.url, "llm_api_key": PAGE_KEY}}
        )
        assert reply.status == 200, reply.text
        database_url = admin.services.settings.base.secret("database_url")

    env = PtyChat.env(tmp_path, LLM_API_BASE=env_base, LLM_MODEL="ollama/test-model")
    if database_url:
        env["DATABASE_URL"] = database_url
    llm.script(Text("From the page's address."))
    chat = await PtyChat.start(env, tmp_path)
    try:
        banner = await chat.prompt()
        assert "2 settings come from the admin page" in banner
        chat.type("hello\n")
        assert "From the page's address." in await chat.prompt()
        chat.type("/quit\n")
        assert await chat.exit_code() == 0
    finally:
        chat.close()
    log_text = (tmp_path / "logs" / "chat.log").read_text("utf-8")
    lines = [line for line in log_text.splitlines() if "comes from the admin page" in line]
    assert len(lines) == 2, log_text
    assert " INFO " in lines[0] and " INFO " in lines[1]
    base_line = next(line for line in lines if "LLM_API_BASE=" in line)
    assert f"LLM_API_BASE='{llm.url}'" in base_line
    assert f"overrides the .env or the environment value '{env_base}'" in base_line
    key_line = next(line for line in lines if "LLM_API_KEY=" in line)
    assert "LLM_API_KEY=…wxyz" in key_line and "value (not set)" in key_line
    assert PAGE_KEY not in log_text
