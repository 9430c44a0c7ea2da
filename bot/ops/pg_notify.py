"""PostgreSQL LISTEN/NOTIFY for the settings sync: one dedicated asyncpg connection.

A lost connection (a server restart, a failover, an idle timeout, pg_terminate_backend) is
opened again at once, retrying with back-off; once listening again the subscriber's callback
runs, so the changes whose notifications went unheard meanwhile are caught up by a reload.

asyncpg is imported when a notifier first connects, so that SQLite installs never need it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from bot.utils.tasks import BackgroundTasks

log = logging.getLogger(__name__)

# As bot.ops.settings_sync.Callback: spelled out here because settings_sync imports this module.
Callback = Callable[[], Coroutine[Any, Any, None]]

# How the listening connection shows in pg_stat_activity.
LISTEN_APPLICATION = "playchat-settings"
# Back-off while the server cannot be reached: first retry soon, then at most this often.
RETRY_FIRST = 0.1
RETRY_MAX = 5.0


def asyncpg_dsn(url: str) -> str:
    """A SQLAlchemy-style URL (`postgresql+asyncpg://…`) as asyncpg accepts it."""
    scheme, _, rest = url.partition("://")
    return f"{scheme.split('+', 1)[0]}://{rest}"


class PostgresNotifier:
    """`ChangeNotifier` over LISTEN/NOTIFY on `channel`, on a connection of its own."""

    def __init__(self, url: str, channel: str) -> None:
        self._dsn = asyncpg_dsn(url)
        self._channel = channel
        self._conn: Any = None
        self._heard: Any = None
        self._callback: Callback | None = None
        self._closing = asyncio.Event()
        self._tasks = BackgroundTasks()
        # One asyncpg connection runs one query at a time.
        self._using = asyncio.Lock()
        # Notifications heard while a callback is pending or running: one more run, not one
        # per notification (a flood of 20,000 must cost a few reloads, not 20,000).
        self._again = False
        self._delivering = False

    async def _connection(self) -> Any:
        """The connection, opened (again) when needed; call with `_using` held."""
        if self._conn is None or self._conn.is_closed():
            # Imported by name: untyped, and only PostgreSQL installs have it.
            asyncpg = importlib.import_module("asyncpg")
            conn = await asyncpg.connect(
                self._dsn, server_settings={"application_name": LISTEN_APPLICATION}
            )
            conn.add_termination_listener(self._lost)
            if self._heard is not None:  # a lost connection: listen again on the new one
                await conn.add_listener(self._channel, self._heard)
            self._conn = conn
        return self._conn

    def _lost(self, conn: Any) -> None:
        """asyncpg's termination listener: a connection we did not close went away."""
        if self._closing.is_set() or conn is not self._conn or self._heard is None:
            return
        log.warning("settings notifications: the LISTEN connection was lost; reconnecting")
        self._tasks.spawn(self._listen_again(), name="settings-listen-again")

    async def _listen_again(self) -> None:
        """Reconnect (with back-off) and LISTEN, then catch up on what went unheard."""
        delay = RETRY_FIRST
        while not self._closing.is_set():
            try:
                async with self._using:
                    await self._connection()
            except Exception as error:  # the server still down, refusing, restarting
                log.warning(
                    "settings notifications: cannot reconnect (%s); retrying in %.1f s",
                    error,
                    delay,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._closing.wait(), delay)
                delay = min(delay * 2, RETRY_MAX)
                continue
            log.info("settings notifications: listening again")
            if self._callback is not None:
                await self._callback()
            return

    async def subscribe(self, callback: Callback) -> None:
        """LISTEN on the channel; each notification runs `callback()` in the background."""

        def heard(_conn: Any, _pid: int, _channel: str, _payload: str) -> None:
            self._again = True
            if not self._delivering:
                self._delivering = True
                self._tasks.spawn(self._deliver(callback), name="settings-notified")

        async with self._using:
            conn = await self._connection()
            await conn.add_listener(self._channel, heard)
            self._heard = heard
            self._callback = callback

    async def _deliver(self, callback: Callback) -> None:
        """Run `callback()` until no notification arrived during the last run."""
        try:
            while self._again and not self._closing.is_set():
                self._again = False
                await callback()
        finally:
            self._delivering = False

    async def notify(self) -> None:
        """NOTIFY the channel (every listener, this process included, hears it)."""
        async with self._using:
            conn = await self._connection()
            await conn.execute("SELECT pg_notify($1, '')", self._channel)

    async def close(self) -> None:
        """Close the connection; callbacks still running get a moment to finish."""
        self._closing.set()
        if self._conn is not None and not self._conn.is_closed():
            await self._conn.close()
        await self._tasks.close(grace=2.0)
