"""A real `python -m bot` start and one admin page visit log a few readable INFO lines: no
access lines (unless ADMIN_ACCESS_LOG), no voice warnings, no reprs, one line per sync and
per migration run."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

from bot.store.schema.migrations import SCHEMA_VERSION
from tests.bot_process import bot_env, spawn_entry
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.ops.conftest import closed_port
from tests.sharding.processes import ENTRY, START, BotProcess

TOKEN = "log-noise-token-0123456789"
REPLY = "At nine."
# What the admin page asks for on one visit (the page, its script and style, its first reads).
PAGE_VISIT = (
    "/",
    "/static/admin.css",
    "/static/js/app.js",
    "/static/js/api.js",
    "/api/readiness",
    "/api/settings",
    "/api/spaces",
    "/api/logs/live/recent",
)
LOG_LINE = re.compile(r"^\S+ \S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) (\S+): (.*)$")


async def _visit(url: str) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        for path in PAGE_VISIT:
            async with http.get(url + path) as reply:
                assert reply.status < 400, (path, reply.status)
                await reply.read()


async def _start_and_visit(tmp_path: Path, llm: FakeLLMServer, **extra: str) -> list[str]:
    """The log lines of a start, one admin page visit and a stop."""
    kb = tmp_path / "kb"
    kb.mkdir(exist_ok=True)
    (kb / "guide.md").write_text("# Guide\n\nThe office opens at nine.\n", "utf-8")
    admin_port = closed_port()
    async with FakeDiscord() as server:
        env = bot_env(
            tmp_path / "bot.db",
            DISCORD_TOKEN=server.token,
            DISCORD_GUILD_IDS=str(server.guild_id),
            LLM_MODEL="ollama/test-model",
            LLM_API_BASE=llm.url,
            KB_DIR=str(kb),
            ADMIN_PORT=str(admin_port),
            ADMIN_TOKEN=TOKEN,
            LOG_LEVEL="INFO",
            **extra,
        )
        process = await spawn_entry(ENTRY, server.api_url, server.gateway_url, env, tmp_path)
        running = BotProcess(process)
        try:
            await running.wait_for_log(r"INFO bot\.bot: logged in as", START)
            await running.wait_for_log(r"INFO admin_api\.app: admin API listening on", START)
            await _visit(f"http://127.0.0.1:{admin_port}")
            # One turn: it reads the local knowledge base (its first sync).
            llm.default_reply = Text(REPLY)
            message = await server.inject_message("when does the office open?")
            await server.wait_for(
                lambda: any(m.content == REPLY for m in server.messages_in(message.id)), START
            )
        finally:
            code = await running.stop()
    assert code == 0, running.stderr
    return running.stderr.splitlines()


def _records(lines: list[str]) -> list[tuple[str, str, str]]:
    """(level, logger, message) of each log line (continuation lines left out)."""
    return [m.groups() for line in lines if (m := LOG_LINE.match(line))]  # type: ignore[misc]


@pytest.mark.sqlite_only(reason="the child process opens its own DB_PATH file")
async def test_a_start_and_a_page_visit_log_a_few_readable_lines(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    records = _records(await _start_and_visit(tmp_path, llm))
    info = [(logger, message) for level, logger, message in records if level == "INFO"]
    shown = "\n".join(f"{logger}: {message}" for logger, message in info)
    # Measured 2026-12-07: 14 INFO lines here (a new database, one guild, one turn); before,
    # the same run logged 24 (8 aiohttp.access lines of the visit, 2 apscheduler, a duplicate
    # "admin API on"), plus the two voice WARNINGs.
    assert len(info) <= 16, shown
    assert not [r for r in records if r[1] == "aiohttp.access"], shown
    assert not [r for r in records if "voice will NOT be supported" in r[2]], records
    assert not [r for r in records if r[1].startswith("apscheduler")], shown
    assert not [r for r in records if "Report(" in r[2] or "SyncReport" in r[2]], shown
    synced = [m for logger, m in info if logger == "bot.memory.local_kb"]
    assert synced == [
        "local knowledge base synced: 1 files (1 added, 0 updated, 0 removed), "
        "1 embedded in 1 calls"
    ]
    assert [m for logger, m in info if logger == "bot.store.engine.migrate"] == [
        "database created at schema version " + str(SCHEMA_VERSION)
    ]
    assert sum("admin API" in m for _, m in info) == 1, shown


@pytest.mark.sqlite_only(reason="the child process opens its own DB_PATH file")
async def test_admin_access_log_turns_the_access_lines_on(
    tmp_path: Path, llm: FakeLLMServer
) -> None:
    records = _records(await _start_and_visit(tmp_path, llm, ADMIN_ACCESS_LOG="true"))
    access = [message for _, logger, message in records if logger == "aiohttp.access"]
    assert len(access) == len(PAGE_VISIT), access
    assert '"GET /api/settings HTTP/1.1" 200' in "\n".join(access)
