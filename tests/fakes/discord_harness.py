"""Run a real discord.py client against `FakeDiscord`.

    async with FakeDiscord() as server, run_client(bot, server) as client:
        ...  # client is ready and sees the guild

`run_client` points `discord.http.Route.BASE` and `DiscordWebSocket.DEFAULT_GATEWAY` at the
fake for the duration (restored after; so one fake per event loop at a time), sets the
client's `guild_ready_timeout` (discord.py waits that long after the last GUILD_CREATE before
`on_ready`; the default 2 s would dominate every test), starts `client.start(token)` as a task,
waits for ready and for the guild to be available (a sharded client: every guild of its
shards), and makes `server.wait_for` fail at once if
the client task dies. On exit it closes the client and re-raises the client task's exception,
if it had one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from tests.fakes.discord_models import shard_of
from tests.fakes.discord_server import FakeDiscord

log = logging.getLogger(__name__)


class ClientFailed(RuntimeError):
    """The client task ended (with an error or not) before it was told to stop."""


@contextlib.asynccontextmanager
async def run_client(
    client: discord.Client,
    server: FakeDiscord,
    *,
    token: str | None = None,
    ready_timeout: float = 10.0,
    guild_ready_timeout: float = 0.05,
) -> AsyncIterator[discord.Client]:
    """Start `client` against `server`, yield it once ready, close it cleanly at exit."""
    old_base, old_gateway = Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY
    Route.BASE = server.api_url
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(server.gateway_url)
    client._connection.guild_ready_timeout = guild_ready_timeout
    task = asyncio.create_task(client.start(token or server.token), name="fake-discord-client")
    server.watch(task)
    body_ok = False
    try:
        # start() creates the ready event in its first step; wait_until_ready() before that raises.
        await asyncio.sleep(0)
        await _wait_ready(client, server, task, ready_timeout)
        yield client
        body_ok = True
    finally:
        server.unwatch(task)
        await _stop(client, task)
        Route.BASE, DiscordWebSocket.DEFAULT_GATEWAY = old_base, old_gateway
    if body_ok and not task.cancelled() and task.exception() is not None:
        raise ClientFailed("client task failed") from task.exception()


async def _wait_ready(
    client: discord.Client, server: FakeDiscord, task: asyncio.Task[None], timeout: float
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout

    async def guild_available() -> None:
        await client.wait_until_ready()
        for guild_id in expected_guilds(client, server):
            while (g := client.get_guild(guild_id)) is None or g.unavailable:
                await client.wait_for("guild_available")

    waiter = asyncio.ensure_future(guild_available())
    try:
        done, _ = await asyncio.wait(
            {task, waiter}, timeout=deadline - loop.time(), return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        waiter.cancel()
    if task in done:
        exc = None if task.cancelled() else task.exception()
        raise ClientFailed(f"client stopped before it was ready: {exc!r}") from exc
    if waiter not in done:
        raise TimeoutError(f"client not ready within {timeout} s")
    waiter.result()


def expected_guilds(client: discord.Client, server: FakeDiscord) -> list[int]:
    """The guilds `client` will be sent: the first guild, or for a sharded client every joined
    guild on its shards."""
    if isinstance(client, discord.AutoShardedClient):
        count = client.shard_count or server.shard_count
        shards: Sequence[int] = client.shard_ids or range(count)
    elif client.shard_count:
        count, shards = client.shard_count, [client.shard_id or 0]
    else:
        return [server.guild_id]
    return [
        guild.id
        for guild in server.state.guilds.values()
        if guild.joined and shard_of(guild.id, count) in shards
    ]


async def _stop(client: discord.Client, task: asyncio.Task[None]) -> None:
    if not client.is_closed():
        try:
            await asyncio.wait_for(client.close(), 10)
        except Exception:
            log.exception("closing the client failed")
    done, _ = await asyncio.wait({task}, timeout=10)
    if not done:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    elif not task.cancelled() and task.exception() is not None:
        log.debug("client task ended with %r", task.exception())
