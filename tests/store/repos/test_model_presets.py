"""The first model preset when several processes start together on one PostgreSQL database:
one process's seed meets another's that has inserted but not committed yet."""

from __future__ import annotations

import asyncio

import asyncpg  # type: ignore[import-untyped]
import pytest

from bot.ops.pg_notify import asyncpg_dsn
from bot.store.engine.database import Database
from bot.store.repos.model_presets import ModelPresetRepository

OTHER = "ollama/qwen3:8b"
BLOCKED = (
    "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


async def _blocked_or_done(other: asyncpg.Connection, seeding: asyncio.Task[object]) -> None:
    """Until the seed waits on a lock held by `other`'s transaction, or has finished."""
    async with asyncio.timeout(10):
        while not seeding.done() and await other.fetchval(BLOCKED) == 0:
            await asyncio.sleep(0.01)


@pytest.mark.parametrize("model", [OTHER, "ollama/llama3"], ids=["same model", "another model"])
async def test_postgresql_a_seed_meeting_another_uncommitted_one_adds_nothing(
    postgres_db: str, model: str
) -> None:
    """It waits for the other's commit and then finds the preset (the same model; before, it
    died on the unique model string: a bot process crashing at start), or adds the configured
    model after it (another model)."""
    db = await Database.connect(postgres_db)
    other = await asyncpg.connect(asyncpg_dsn(postgres_db))
    try:
        presets = ModelPresetRepository(db)
        started = other.transaction()
        await started.start()
        await other.execute(
            "INSERT INTO model_presets (label, value, created_at) VALUES ($1, $2, $3)",
            "qwen3:8b",
            OTHER,
            "2026-01-01T00:00:00+00:00",
        )
        seeding = asyncio.ensure_future(presets.seed(model))
        await _blocked_or_done(other, seeding)
        await started.commit()
        seeded = await seeding
        if model == OTHER:
            assert seeded is None
            assert [p.value for p in await presets.list()] == [OTHER]
        else:  # the configured model is always listed, after the other's row
            assert seeded is not None and seeded.seeded
            assert [p.value for p in await presets.list()] == [OTHER, model]
    finally:
        await other.close()
        await db.close()


async def test_postgresql_seeds_started_together_add_one_preset(postgres_db: str) -> None:
    """Two processes' stores seeding at once: one preset, added by exactly one of them."""
    first, second = await Database.connect(postgres_db), await Database.connect(postgres_db)
    try:
        results = await asyncio.gather(
            ModelPresetRepository(first).seed(OTHER), ModelPresetRepository(second).seed(OTHER)
        )
        assert sorted(r is None for r in results) == [False, True]
        assert [p.value for p in await ModelPresetRepository(first).list()] == [OTHER]
    finally:
        await first.close()
        await second.close()


async def test_the_seeded_connection_follows_the_model_until_someone_edits_it(
    database_url: str,
) -> None:
    db = await Database.connect(database_url)
    try:
        presets = ModelPresetRepository(db)
        first = await presets.seed("ollama/qwen3:8b")
        assert first is not None and first.seeded and first.label == "qwen3:8b"
        assert await presets.seed("ollama/qwen3:8b") is None
        # LLM_MODEL changed: the same connection now names the new model.
        moved = await presets.seed("openai/gpt-4o-mini")
        assert moved is not None and moved.id == first.id and moved.label == "gpt-4o-mini"
        assert [p.value for p in await presets.list()] == ["openai/gpt-4o-mini"]
        # Edited: it is the editor's; the next model gets a connection of its own.
        await presets.update(first.id, {"label": "Mine"})
        added = await presets.seed("ollama/llama3")
        assert added is not None and added.id != first.id and added.seeded
        listed = await presets.list()
        assert [(p.value, p.seeded) for p in listed] == [
            ("openai/gpt-4o-mini", False),
            ("ollama/llama3", True),
        ]
    finally:
        await db.close()
