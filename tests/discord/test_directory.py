"""The channel directory end to end: the real discord.py client on the loopback Discord records
its servers' channels (ready, channel create/rename/delete, joining a server), and the real
admin API lists them and shows topics by channel name with the scheduler's next run."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from admin_api import AdminConfig, serve
from bot.store.repos.directory import DirectoryRepository
from bot.topics.scheduler import TopicScheduler
from tests.discord.conftest import WAIT, World, WorldFactory

TOKEN = "directory-admin-token-0123456789"


class Writes:
    """Wakes waiters after every directory write (no sleeping, no polling on a timer)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._changed = asyncio.Condition()
        for name in ("replace_server", "upsert", "remove"):
            original: Callable[..., Awaitable[None]] = getattr(DirectoryRepository, name)
            monkeypatch.setattr(DirectoryRepository, name, self._spy(original))

    def _spy(self, original: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
        async def spy(*args: Any, **kwargs: Any) -> None:
            await original(*args, **kwargs)
            async with self._changed:
                self._changed.notify_all()

        return spy

    async def until(self, check: Callable[[], Awaitable[bool]]) -> None:
        """Wait (bounded) until `check()` holds after some write."""
        async with asyncio.timeout(WAIT):
            while True:
                async with self._changed:
                    if await check():
                        return
                    await self._changed.wait()


async def names(w: World, space: str) -> list[str]:
    (server,) = await w.services.repos.directory.servers(space)
    return [channel.name for channel in server.channels]


@asynccontextmanager
async def admin_api(w: World) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
    config = dataclasses.replace(
        AdminConfig.from_settings(w.services.settings()), host="127.0.0.1", port=0
    )
    async with await serve(w.services, config=config) as server, aiohttp.ClientSession() as http:

        async def call(method: str, path: str, body: Any = None) -> Any:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with http.request(method, server.url + path, json=body, headers=headers) as r:
                assert r.status == 200, await r.text()
                return await r.json()

        yield call


async def test_the_directory_follows_channels_and_servers_and_topics_show_names(
    world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes = Writes(monkeypatch)
    async with world(admin_token=TOKEN) as w:
        server, space = w.server, w.space
        existing = [c.name for c in server.guild_channels(server.guild_id)]
        await writes.until(lambda: _has(w, space, existing))

        added = server.add_channel("announcements")
        await writes.until(lambda: _has(w, space, ["announcements"]))
        (row,) = [
            c for c in await w.services.repos.directory.channels(space) if c.channel_id == added.id
        ]
        assert (row.kind, row.space_id) == ("text", space)

        added.name = "news"
        server.gateway.dispatch("CHANNEL_UPDATE", server.state.channel_json(added))
        await writes.until(lambda: _has(w, space, ["news"]))
        assert "announcements" not in await names(w, space)

        gone = server.add_channel("scratch")
        await writes.until(lambda: _has(w, space, ["scratch"]))
        server.state.channels.pop(gone.id)
        server.gateway.dispatch("CHANNEL_DELETE", server.state.channel_json(gone))
        await writes.until(lambda: _lacks(w, space, "scratch"))

        other = server.add_guild("Server B")
        await writes.until(lambda: _has(w, f"guild:{other.id}", ["general"]))

        scheduler = TopicScheduler(w.services.topics)
        await scheduler.start()
        try:
            async with admin_api(w) as call:
                listed = await call("GET", f"/api/directory?space={space}")
                (shown,) = listed["servers"]
                assert shown["space_id"] == space and shown["guild_id"] == str(server.guild_id)
                assert "news" in [c["name"] for c in shown["channels"]]
                everything = await call("GET", "/api/directory")
                assert {s["name"] for s in everything["servers"]} >= {"Server B"}

                # A channel picked from the directory: no guild_id needed, it lands in its
                # server's space, and the list shows its name and the next idle check.
                put = await call("PUT", f"/api/topics/{added.id}", {"enabled": True})
                assert put["channel"]["space_id"] == space
                assert put["channel"]["channel_name"] == "news"
                (item,) = (await call("GET", "/api/topics"))["channels"]
                assert item["channel_name"] == "news" and item["next_idle_check"] is not None
                assert item["next_cron_post"] is None and item["last_openers"] == []
        finally:
            scheduler.shutdown()


async def _has(w: World, space: str, wanted: list[str]) -> bool:
    servers = await w.services.repos.directory.servers(space)
    return bool(servers) and set(wanted) <= {c.name for c in servers[0].channels}


async def _lacks(w: World, space: str, name: str) -> bool:
    return name not in await names(w, space)
