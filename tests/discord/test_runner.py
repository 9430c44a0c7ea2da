"""Start-up and shutdown: invite URL, intents, signals, bad tokens; the discord import rule."""

from __future__ import annotations

import ast
import asyncio
import logging
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from bot.bot import REQUIRED_PERMISSIONS, build_intents, invite_url, run_discord
from bot.prompts.ui_text import ui_text
from bot.services import ServiceOptions, open_services
from tests.conftest import SettingsFactory
from tests.fakes.discord_server import FakeDiscord

REPO = Path(__file__).resolve().parents[2]


def test_invite_asks_for_exactly_the_needed_permissions() -> None:
    # view channel, send, attach files, read history, use application commands,
    # create public threads, send in threads — nothing else.
    expected = (1 << 10) | (1 << 11) | (1 << 15) | (1 << 16) | (1 << 31) | (1 << 35) | (1 << 38)
    assert REQUIRED_PERMISSIONS.value == expected == 311385230336
    url = yarl.URL(invite_url(1234))
    assert url.host == "discord.com" and url.path == "/oauth2/authorize"
    assert url.query["client_id"] == "1234"
    assert url.query["permissions"] == "311385230336"
    assert url.query["scope"] == "bot applications.commands"


def test_intents_are_limited_to_what_is_used(make_settings: SettingsFactory) -> None:
    guilds, guild_messages, dms, content = 1 << 0, 1 << 9, 1 << 12, 1 << 15
    guild_typing, dm_typing = 1 << 11, 1 << 14  # a member still typing: bursts (issue 39)
    guild = guilds | guild_messages | guild_typing | content
    assert build_intents(make_settings()).value == guild
    with_dms = build_intents(make_settings(discord_allow_dms=True))
    assert with_dms.value == guild | dms | dm_typing
    assert not with_dms.members and not with_dms.presences


def test_only_bot_py_and_exts_import_discord() -> None:
    offenders = []
    for path in sorted((REPO / "bot").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel == "bot/bot.py" or rel.startswith("bot/exts/"):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            if any(n == "discord" or n.startswith("discord.") for n in names):
                offenders.append(rel)
    assert offenders == []


@contextmanager
def _pointed_at(server: FakeDiscord) -> Iterator[None]:
    old = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = server.api_url
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(server.gateway_url)
    try:
        yield
    finally:
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = old


class _Announced(logging.Handler):
    """Sets an event when the invite URL is logged."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seen = asyncio.Event()
        self.url = ""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "invite PlayChat" in message:
            self.url = message.rsplit(" ", 1)[-1]
            self.seen.set()


async def test_run_discord_logs_the_invite_url_and_stops_on_sigterm(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    async with FakeDiscord() as server:
        settings = make_settings(discord_token=server.token, discord_guild_ids=[server.guild_id])
        announced = _Announced()
        logger = logging.getLogger("bot.bot")
        logger.addHandler(announced)
        old_level = logger.level
        logger.setLevel(logging.INFO)
        try:
            async with open_services(settings, service_options) as services:
                with _pointed_at(server):
                    task = asyncio.create_task(run_discord(services))
                    await asyncio.wait_for(announced.seen.wait(), 15)
                    assert server.connected() == 1
                    os.kill(os.getpid(), signal.SIGTERM)
                    assert await asyncio.wait_for(task, 15) == 0
        finally:
            logger.removeHandler(announced)
            logger.setLevel(old_level)
        assert str(server.application_id) in announced.url
        assert "permissions=311385230336" in announced.url
        assert server.connected() == 0, "the gateway connection was closed"
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "handler removed again"


@pytest.mark.parametrize(
    ("language", "expected"),
    [("en", "Discord rejected DISCORD_TOKEN"), ("ja", "DISCORD_TOKEN を受け付けませんでした")],
)
async def test_a_rejected_token_exits_with_a_clear_message(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    capsys: pytest.CaptureFixture[str],
    language: str,
    expected: str,
) -> None:
    async with FakeDiscord() as server:
        settings = make_settings(discord_token="not-the-token", language=language)
        async with open_services(settings, service_options) as services:
            with _pointed_at(server):
                code = await asyncio.wait_for(run_discord(services), 15)
    assert code == 2
    err = capsys.readouterr().err
    assert expected in err and err == ui_text(language).runner_bad_token


async def test_without_a_token_the_runner_says_so_in_the_configured_language(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with open_services(make_settings(language="ja"), service_options) as services:
        assert await run_discord(services) == 2
    assert capsys.readouterr().err == "DISCORD_TOKEN が設定されていません。\n"


async def test_python_m_bot_serves_discord_admin_api_and_scheduler_in_one_loop(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> None:
    import socket

    import aiohttp

    from bot.__main__ import serve_all

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    async with FakeDiscord() as server:
        settings = make_settings(
            discord_token=server.token,
            discord_guild_ids=[server.guild_id],
            admin_port=port,
            admin_token="a-long-enough-admin-token",
        )
        announced = _Announced()
        logger = logging.getLogger("bot.bot")
        logger.addHandler(announced)
        old_level = logger.level
        logger.setLevel(logging.INFO)
        try:
            async with open_services(settings, service_options) as services:
                await services.topics.configure(server.channel_id, {"enabled": True})
                stop = asyncio.Event()
                with _pointed_at(server):
                    task = asyncio.create_task(serve_all(services, stop=stop))
                    await asyncio.wait_for(announced.seen.wait(), 15)
                    headers = {"Authorization": "Bearer a-long-enough-admin-token"}
                    async with aiohttp.ClientSession() as http:
                        health = await http.get(f"http://127.0.0.1:{port}/health")
                        assert health.status == 200
                        topics = await http.get(
                            f"http://127.0.0.1:{port}/api/topics", headers=headers
                        )
                        assert topics.status == 200
                    assert services.topics.poster is not None, "the bot posts topics"
                    stop.set()
                    assert await asyncio.wait_for(task, 15) == 0
        finally:
            logger.removeHandler(announced)
            logger.setLevel(old_level)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # the admin API released its port
