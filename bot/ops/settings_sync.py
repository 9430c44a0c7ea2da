"""Runtime settings changed in one process reach every process on the same database.

Each process holds its settings in memory (`RuntimeSettings`); a change made through one
process's admin API or slash command is stored in app_settings and applied there at once.
The other processes learn of it here: with SQLite by reading the (few) stored overrides every
couple of seconds and reloading when they differ from the ones applied; with PostgreSQL by
LISTEN/NOTIFY on one channel (`ChangeNotifier`), a process telling the others after it stored
a change. Either way a reload fires the settings listeners with the changed keys, as a local
change does, and a reset (an override deleted) counts as a change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, Protocol

from bot.config import RuntimeSettings
from bot.ops.readiness import Check, Probe
from bot.utils.tasks import BackgroundTasks

log = logging.getLogger(__name__)

CHANNEL = "playchat_settings"
# Bounds of the SQLite check's period: often enough to feel immediate to an operator, rarely
# enough to cost nothing (one small read of app_settings).
MIN_INTERVAL = 0.05
MAX_INTERVAL = 60.0
DEFAULT_INTERVAL = 2.0

Callback = Callable[[], Coroutine[Any, Any, None]]


class ChangeNotifier(Protocol):
    """Tells other processes that settings changed, and hears when they did."""

    async def subscribe(self, callback: Callback) -> None:
        """Call `callback()` whenever any process (this one included) calls `notify()`."""

    async def notify(self) -> None:
        """Tell every subscribed process that the stored settings changed."""

    async def close(self) -> None:
        """Stop listening and release the connection."""


def notifier_for(database_url: str | None) -> ChangeNotifier | None:
    """The notifier for a database URL: LISTEN/NOTIFY for PostgreSQL; None (poll) otherwise."""
    if database_url and database_url.split(":", 1)[0].split("+", 1)[0] in (
        "postgresql",
        "postgres",
    ):
        from bot.ops.pg_notify import PostgresNotifier

        return PostgresNotifier(database_url, CHANNEL)
    return None


class SettingsSync:
    """Keeps this process's runtime settings in step with the database until `stop()`."""

    def __init__(
        self,
        runtime: RuntimeSettings,
        tasks: BackgroundTasks,
        *,
        notifier: ChangeNotifier | None = None,
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self._runtime = runtime
        self._tasks = tasks
        self._notifier = notifier
        self._interval = min(max(interval, MIN_INTERVAL), MAX_INTERVAL)
        self._stop = asyncio.Event()

    @property
    def mode(self) -> str:
        """For logs and tests: "notify" (PostgreSQL) or "poll" (SQLite)."""
        return "poll" if self._notifier is None else "notify"

    async def start(self) -> None:
        """Begin following changes made elsewhere."""
        self._stop.clear()
        if self._notifier is None:
            self._tasks.spawn(self._poll(), name="settings-sync")
            return
        await self._notifier.subscribe(self._changed_elsewhere)
        self._runtime.on_saved(self._tell_others)
        # Whatever changed before we listened.
        await self._runtime.reload()

    async def stop(self) -> None:
        """Stop following (the poll ends at once; the notifier's connection is closed)."""
        self._stop.set()
        if self._notifier is not None:
            await self._notifier.close()

    async def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), self._interval)
            except TimeoutError:
                await self._reload()

    async def _changed_elsewhere(self) -> None:
        await self._reload()

    async def _reload(self) -> None:
        try:
            await self._runtime.reload()
        except Exception:
            # A locked or briefly unreachable database: the next check tries again.
            log.warning("could not reload the runtime settings", exc_info=True)

    def _tell_others(self, _keys: frozenset[str]) -> None:
        if self._notifier is not None and not self._stop.is_set():
            self._tasks.spawn(self._notifier.notify(), name="settings-notify")


@asynccontextmanager
async def settings_synced(runtime: RuntimeSettings, tasks: BackgroundTasks) -> AsyncIterator[None]:
    """Follow settings changed by other processes while the block runs (a long-running
    process: the bot, the admin API alone), through the database its settings name."""
    settings = runtime()
    url = settings.database()
    sync = SettingsSync(
        runtime, tasks, notifier=notifier_for(url), interval=settings.settings_sync_interval
    )
    await sync.start()
    log.debug("following settings changed elsewhere (%s)", sync.mode)
    try:
        yield
    finally:
        await sync.stop()


def stored_settings_probe(runtime: RuntimeSettings) -> Probe:
    """Readiness of the stored overrides: degraded while any is left out (not JSON, or
    refused by its setting), naming each and the fix."""

    async def probe() -> Check:
        skipped = runtime.skipped()
        if not skipped:
            return Check("ok", "Every setting stored on the admin page is in effect.")
        names = ", ".join(key.upper() for key in sorted(skipped))
        return Check(
            "degraded",
            f"Stored settings left out: {names} (the .env value applies); set them again or "
            "reset them on the Settings page.",
            error="; ".join(f"{key.upper()}: {why}" for key, why in sorted(skipped.items())),
        )

    return probe
