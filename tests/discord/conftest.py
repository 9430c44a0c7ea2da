"""A running PlayChat bot against the loopback Discord, the loopback LLM and a real SQLite file."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from bot.bot import BotDeps, PlayChatBot
from bot.services import ServiceOptions, Services, open_services
from tests.conftest import SettingsFactory
from tests.fakes.discord_harness import run_client
from tests.fakes.discord_server import FakeDiscord, FakeMessage
from tests.fakes.llm_server import FakeLLMServer

WAIT = 10.0


@dataclass
class World:
    """Everything one end-to-end test talks to."""

    server: FakeDiscord
    llm: FakeLLMServer
    services: Services
    bot: PlayChatBot

    @property
    def space(self) -> str:
        """The space of the fake guild."""
        return f"guild:{self.server.guild_id}"

    def bot_messages(self, channel_id: int) -> list[FakeMessage]:
        """The bot's visible messages in a channel or thread, oldest first."""
        return [
            m for m in self.server.messages_in(channel_id) if m.author.id == self.server.bot_user.id
        ]

    async def wait_text(self, channel_id: int, text: str, timeout: float = WAIT) -> FakeMessage:
        """Wait until the bot's last message in `channel_id` shows `text` and turns are over."""

        def done() -> FakeMessage | None:
            mine = self.bot_messages(channel_id)
            return mine[-1] if mine and mine[-1].content == text else None

        message = await self.server.wait_for(done, timeout)
        await self.settle(timeout)
        return message

    async def settle(self, timeout: float = WAIT) -> None:
        """Wait until no turn runs (its answer is stored once its reply is finished)."""
        assert await self.bot.deps.turns.wait_idle(timeout), "turns still running"

    async def wait_thread(self, message: FakeMessage, timeout: float = WAIT) -> int:
        """Wait until the thread opened on `message` exists; its id."""
        await self.server.wait_for(
            lambda: any(t.id == message.id for t in self.server.threads), timeout
        )
        return message.id

    def patches(self, channel_id: int) -> list[Any]:
        """Edits of messages in `channel_id` (REST calls, failed ones included)."""
        return self.server.calls_to("PATCH", rf"^/channels/{channel_id}/messages/\d+$")

    def posts(self, channel_id: int) -> list[Any]:
        """Message creates in `channel_id`."""
        return self.server.calls_to("POST", rf"^/channels/{channel_id}/messages$")


WorldFactory = Callable[..., contextlib.AbstractAsyncContextManager[World]]


@pytest.fixture
def world(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> WorldFactory:
    """`async with world(**settings) as w:` — a ready bot in a fresh fake guild.

    `configure(server)` may return more settings that depend on the fake's ids.
    """

    @contextlib.asynccontextmanager
    async def factory(
        configure: Callable[[FakeDiscord], dict[str, Any]] | None = None, **overrides: Any
    ) -> AsyncIterator[World]:
        async with FakeDiscord() as server:
            values: dict[str, Any] = {
                "discord_guild_ids": [server.guild_id],
                "stream_edit_interval": 0.2,  # the lowest allowed
                "user_cooldown_seconds": 0.0,
            }
            values.update(overrides)
            if configure is not None:
                values.update(configure(server))
            settings = make_settings(**values)
            async with open_services(settings, service_options) as services:
                bot = PlayChatBot(BotDeps(services=services))
                async with run_client(bot, server):
                    yield World(server, llm, services, bot)

    return factory
