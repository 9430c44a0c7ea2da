"""PostgreSQL LISTEN/NOTIFY for the settings sync: one dedicated asyncpg connection.

asyncpg is imported when a notifier first connects, so that SQLite installs never need it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import TYPE_CHECKING, Any

from bot.utils.tasks import BackgroundTasks

if TYPE_CHECKING:
    from bot.ops.settings_sync import Callback

log = logging.getLogger(__name__)


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
        self._tasks = BackgroundTasks()
        # One asyncpg connection runs one query at a time.
        self._using = asyncio.Lock()

    async def _connection(self) -> Any:
        """The connection, opened (again) when needed; call with `_using` held."""
        if self._conn is None or self._conn.is_closed():
            # Imported by name: untyped, and only PostgreSQL installs have it.
            asyncpg = importlib.import_module("asyncpg")
            self._conn = await asyncpg.connect(self._dsn)
            if self._heard is not None:  # a lost connection: listen again on the new one
                await self._conn.add_listener(self._channel, self._heard)
        return self._conn

    async def subscribe(self, callback: Callback) -> None:
        """LISTEN on the channel; each notification runs `callback()` in the background."""

        def heard(_conn: Any, _pid: int, _channel: str, _payload: str) -> None:
            self._tasks.spawn(callback(), name="settings-notified")

        async with self._using:
            conn = await self._connection()
            await conn.add_listener(self._channel, heard)
            self._heard = heard

    async def notify(self) -> None:
        """NOTIFY the channel (every listener, this process included, hears it)."""
        async with self._using:
            conn = await self._connection()
            await conn.execute("SELECT pg_notify($1, '')", self._channel)

    async def close(self) -> None:
        """Close the connection; callbacks still running get a moment to finish."""
        if self._conn is not None and not self._conn.is_closed():
            await self._conn.close()
        await self._tasks.close(grace=2.0)
