"""Runtime settings changed in one process reach the others: SQLite by a periodic check of
app_settings, PostgreSQL by LISTEN/NOTIFY (`playchat_settings`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.config import RuntimeSettings, Settings
from bot.ops.pg_notify import LISTEN_APPLICATION, PostgresNotifier, asyncpg_dsn
from bot.ops.settings_sync import CHANNEL, SettingsSync, notifier_for
from bot.store.engine.database import Database
from bot.store.repos.app_settings import AppSettingsRepository
from bot.utils.tasks import BackgroundTasks

WAIT = 10.0


def _settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, db_path=tmp_path / "shared.db", llm_model="ollama/base")


class Heard:
    """The changes a RuntimeSettings told its listeners of, awaitable one by one."""

    def __init__(self, runtime: RuntimeSettings) -> None:
        self.changes: asyncio.Queue[tuple[Settings, frozenset[str]]] = asyncio.Queue()
        runtime.subscribe(lambda settings, keys: self.changes.put_nowait((settings, keys)))

    async def next(self) -> tuple[Settings, frozenset[str]]:
        """The next change (fails after WAIT seconds)."""
        return await asyncio.wait_for(self.changes.get(), WAIT)


@asynccontextmanager
async def _process(
    settings: Settings, repo: AppSettingsRepository | None = None, *, pg_url: str | None = None
) -> AsyncIterator[tuple[RuntimeSettings, Heard]]:
    """What one process holds: its database, runtime settings and the sync (polling fast)."""
    async with AsyncExitStack() as stack:
        if repo is None:
            db = await Database.open(settings.db_path)
            stack.push_async_callback(db.close)
            repo = AppSettingsRepository(db)
        runtime = RuntimeSettings(settings, repo)
        await runtime.load()
        tasks = BackgroundTasks()
        stack.push_async_callback(tasks.close)
        sync = SettingsSync(runtime, tasks, notifier=notifier_for(pg_url), interval=0.05)
        await sync.start()
        stack.push_async_callback(sync.stop)
        yield runtime, Heard(runtime)


async def test_a_change_and_a_reset_in_one_process_reach_the_other_on_sqlite(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    async with _process(settings) as (one, heard_one), _process(settings) as (two, heard_two):
        await one.update({"llm_model": "ollama/changed", "system_prompt_extra": "Be brief."})
        _, local = await heard_one.next()
        reloaded, keys = await heard_two.next()
        assert local == keys == {"llm_model", "system_prompt_extra"}
        assert reloaded.llm_model == "ollama/changed" == two().llm_model
        assert two().system_prompt_extra == "Be brief."
        # A reset (override deleted: back to the environment's value) travels too.
        await two.update({"llm_model": None})
        _, keys = await heard_one.next()
        assert keys == {"llm_model"} and one().llm_model == "ollama/base"
        assert one().system_prompt_extra == "Be brief."
        assert one.overrides() == two.overrides() == {"system_prompt_extra": "Be brief."}
        await heard_two.next()  # its own change
        # Nothing else was announced: a process does not hear its own change again.
        await one.update({"language": "en"})
        await heard_two.next()
        await heard_one.next()
        assert heard_one.changes.empty() and heard_two.changes.empty()


async def test_the_sqlite_check_reads_app_settings_and_stops_with_the_process(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    async with _process(settings) as (runtime, heard):
        db = await Database.open(settings.db_path)
        try:
            # Another process's write, straight into the table.
            await AppSettingsRepository(db).set_many({"user_cooldown_seconds": 9})
            _, keys = await heard.next()
        finally:
            await db.close()
        assert keys == {"user_cooldown_seconds"} and runtime().user_cooldown_seconds == 9


class SharedOverrides(AppSettingsRepository):
    """app_settings as one dict shared by several "processes" (the PostgreSQL store is not
    here yet; only the notification travels through PostgreSQL in this test)."""

    def __init__(self, rows: dict[str, Any]) -> None:
        self.rows = rows

    async def all(self) -> dict[str, Any]:
        """Every stored override."""
        return dict(self.rows)

    async def set_many(self, values: dict[str, Any]) -> None:
        """Store overrides (None removes one)."""
        for key, value in values.items():
            if value is None:
                self.rows.pop(key, None)
            else:
                self.rows[key] = value


async def test_postgresql_listen_notify_tells_every_process_at_once(
    tmp_path: Path, postgres_db: str
) -> None:
    settings = _settings(tmp_path)
    rows: dict[str, Any] = {}
    url = postgres_db.replace("postgresql://", "postgresql+asyncpg://")
    assert isinstance(notifier_for(url), PostgresNotifier)
    assert notifier_for("sqlite:///data/playchat.db") is None and notifier_for(None) is None
    async with (
        _process(settings, SharedOverrides(rows), pg_url=url) as (one, heard_one),
        _process(settings, SharedOverrides(rows), pg_url=url) as (two, heard_two),
    ):
        await one.update({"system_prompt_extra": "From process one."})
        await heard_one.next()
        _, keys = await heard_two.next()
        assert keys == {"system_prompt_extra"}
        assert two().system_prompt_extra == "From process one."
        await two.update({"system_prompt_extra": None})
        _, keys = await heard_one.next()
        assert keys == {"system_prompt_extra"} and one().system_prompt_extra == ""


async def test_the_notifier_uses_the_playchat_settings_channel(postgres_db: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    heard: asyncio.Queue[str] = asyncio.Queue()
    conn = await asyncpg.connect(asyncpg_dsn(postgres_db))
    try:
        await conn.add_listener(CHANNEL, lambda *args: heard.put_nowait(args[2]))
        notifier = PostgresNotifier(postgres_db, CHANNEL)
        await notifier.notify()
        assert await asyncio.wait_for(heard.get(), WAIT) == "playchat_settings"
        await notifier.close()
    finally:
        await conn.close()


async def test_a_lost_listen_connection_is_opened_again_and_catches_up(
    tmp_path: Path, postgres_db: str
) -> None:
    """The server ends the LISTEN connections (a restart, a failover, an idle timeout): each
    process listens again, reloads what it missed meanwhile, and hears later changes."""
    import asyncpg  # type: ignore[import-untyped]

    settings = _settings(tmp_path)
    rows: dict[str, Any] = {}
    async with (
        _process(settings, SharedOverrides(rows), pg_url=postgres_db) as (one, heard_one),
        _process(settings, SharedOverrides(rows), pg_url=postgres_db) as (two, heard_two),
    ):
        # A change whose notification nobody hears: stored while the connections go away.
        rows["system_prompt_extra"] = "Missed while deaf."
        admin = await asyncpg.connect(asyncpg_dsn(postgres_db))
        try:
            pids = await admin.fetch(
                "SELECT pid FROM pg_stat_activity WHERE application_name = $1", LISTEN_APPLICATION
            )
            assert len(pids) == 2
            for row in pids:
                assert await admin.fetchval("SELECT pg_terminate_backend($1)", row["pid"])
        finally:
            await admin.close()
        for runtime, heard in ((one, heard_one), (two, heard_two)):
            _, keys = await heard.next()
            assert keys == {"system_prompt_extra"}
            assert runtime().system_prompt_extra == "Missed while deaf."
        # Listening again: a later change travels by NOTIFY as before.
        await one.update({"system_prompt_extra": "After the cut."})
        await heard_one.next()
        _, keys = await heard_two.next()
        assert keys == {"system_prompt_extra"} and two().system_prompt_extra == "After the cut."


@asynccontextmanager
async def _on(url: str, settings: Settings) -> AsyncIterator[tuple[RuntimeSettings, Heard]]:
    """One process over the database at `url` (SQLite polls, PostgreSQL listens)."""
    async with AsyncExitStack() as stack:
        db = await Database.connect(url)
        stack.push_async_callback(db.close)
        repo = AppSettingsRepository(db)
        yield await stack.enter_async_context(
            _process(settings, repo, pg_url=url if url.startswith("postgresql") else None)
        )


async def _store_raw(url: str, key: str, raw: str) -> None:
    """Another program writes app_settings by hand."""
    db = await Database.connect(url)
    try:
        await db.execute(
            "INSERT INTO app_settings (key, value, updated_at) VALUES (?, ?, '2026-12-07') "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, raw),
        )
    finally:
        await db.close()


async def test_a_row_that_is_not_json_is_skipped_and_reported_not_fatal(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(tmp_path)
    await (await Database.connect(database_url)).close()  # the schema
    await _store_raw(database_url, "system_prompt_extra", "{not json")
    await _store_raw(database_url, "user_cooldown_seconds", "7")
    # Before: load() raised JSONDecodeError and `python -m admin_api` exited at start.
    async with _on(database_url, settings) as (one, _), _on(database_url, settings) as (two, heard):
        assert two().user_cooldown_seconds == 7
        assert set(two.skipped()) == {"system_prompt_extra"}
        assert "not valid JSON" in two.skipped()["system_prompt_extra"]
        # A later change still reaches the other process, however often it reloads.
        for _ in range(5):
            await two.reload()
        await one.update({"user_cooldown_seconds": 9})
        while two().user_cooldown_seconds != 9:
            await heard.next()
        # Set again through the API: no longer skipped anywhere.
        await one.update({"system_prompt_extra": "Fixed."})
        while two().system_prompt_extra != "Fixed.":
            await heard.next()
        assert two.skipped() == {} and one.skipped() == {}
    ignored = [r for r in caplog.records if "ignoring stored setting" in r.getMessage()]
    assert len(ignored) == 2, "one warning per process, not one per reload"
    assert not [r for r in caplog.records if r.exc_info], "no traceback"


async def test_a_flood_of_notifications_costs_few_reloads_and_delays_no_change(
    tmp_path: Path, postgres_db: str
) -> None:
    import asyncpg

    settings = _settings(tmp_path)
    async with _on(postgres_db, settings) as (one, _), _on(postgres_db, settings) as (two, heard):
        reloads = 0
        reload = two.reload

        async def counted() -> frozenset[str]:
            nonlocal reloads
            reloads += 1
            return await reload()

        two.reload = counted  # type: ignore[method-assign]
        flood = await asyncpg.connect(asyncpg_dsn(postgres_db))
        try:
            # Distinct payloads: PostgreSQL folds identical ones within a transaction.
            await flood.execute(
                "SELECT pg_notify($1, g::text) FROM generate_series(1, 20000) g", CHANNEL
            )
        finally:
            await flood.close()
        await one.update({"user_cooldown_seconds": 11})
        while two().user_cooldown_seconds != 11:
            await heard.next()
    # Before: one reload per notification (20,000, serialised: 9.6 s for a real change).
    assert reloads < 100, reloads
