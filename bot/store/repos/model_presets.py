"""Model presets: named model connections (label, model string, address, key) to choose from.

A preset's model string picks the backend as everywhere else (`ollama/…` the native Ollama
client, any other provider string LiteLLM; `bot.config.model_backend` tells which). Its address
(`api_base`) and key (`api_key`) are optional: NULL means the global LLM_API_BASE /
LLM_API_KEY, so a row holding only a model works as before. The key is stored as given and
never leaves through `ModelPreset`'s repr.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.errors import ConflictError
from bot.store.engine.connection import IntegrityError, utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row

log = logging.getLogger(__name__)
# Model strings name their provider first ("ollama/qwen3:8b"); the label is the model's own name.
_PROVIDER_PREFIX_SEPARATOR = "/"
# What a preset's update may change.
EDITABLE = frozenset({"label", "value", "api_base", "api_key"})


@dataclass(frozen=True)
class ModelPreset:
    """One selectable model connection; `api_base`/`api_key` None: the global settings'."""

    id: int
    label: str
    value: str
    created_at: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    seeded: bool = False  # added for LLM_MODEL and never edited: it follows LLM_MODEL


_COLUMNS = "id, label, value, created_at, api_base, api_key, seeded"


def _preset(row: Row) -> ModelPreset:
    return ModelPreset(
        id=row["id"],
        label=row["label"],
        value=row["value"],
        created_at=row["created_at"],
        api_base=row["api_base"],
        api_key=row["api_key"],
        seeded=bool(row["seeded"]),
    )


def label_of(model: str) -> str:
    """A model string's own name, the label a seeded connection gets ("qwen3:8b")."""
    return model.partition(_PROVIDER_PREFIX_SEPARATOR)[2] or model


def _duplicate(value: str) -> ConflictError:
    return ConflictError(f"A model preset for {value!r} already exists.")


class ModelPresetRepository:
    """Reads and writes model_presets; model values are unique."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def list(self) -> list[ModelPreset]:
        """Every preset, oldest first."""
        rows = await self._db.fetchall(f"SELECT {_COLUMNS} FROM model_presets ORDER BY id")
        return [_preset(row) for row in rows]

    async def seed(self, model: str) -> ModelPreset | None:
        """List the configured `model` (LLM_MODEL): the seeded connection follows it, or one is
        added; None when it is listed already.

        Run at start and when LLM_MODEL changes, so the configured model is always there to
        choose; a connection someone edited stays as they left it.
        """
        label = label_of(model)
        async with self._db.transaction() as conn:
            if conn.dialect == "postgresql":
                # Read committed: two processes starting together both find no row for the
                # model and both insert (one then dies on the unique model string). This lock
                # mode conflicts with itself and with writers, so the later seed waits for the
                # earlier one's commit and then sees its row; readers are not held up.
                await conn.execute("LOCK TABLE model_presets IN SHARE ROW EXCLUSIVE MODE")
            # SQLite: BEGIN IMMEDIATE already lets one writer at a time through.
            listed = await conn.execute_fetchall(
                "SELECT id FROM model_presets WHERE value = ?", (model,)
            )
            if listed:
                return None
            seeded = await conn.execute_fetchall(
                "SELECT id, value FROM model_presets WHERE seeded = 1 ORDER BY id LIMIT 1"
            )
            if seeded:
                await conn.execute(
                    "UPDATE model_presets SET value = ?, label = ? WHERE id = ?",
                    (model, label, seeded[0]["id"]),
                )
                preset_id, before = int(seeded[0]["id"]), str(seeded[0]["value"])
            else:
                preset_id, before = (
                    await conn.insert(
                        "INSERT INTO model_presets (label, value, created_at, seeded) "
                        "VALUES (?, ?, ?, 1)",
                        (label, model, utcnow()),
                    ),
                    "",
                )
        if before:
            log.info("the model connection %s follows LLM_MODEL: now %s", before, model)
        else:
            log.info("added the configured model %s as a model connection", model)
        return await self.get(preset_id)

    async def get(self, preset_id: int) -> ModelPreset | None:
        """One preset by id."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM model_presets WHERE id = ?", (preset_id,)
        )
        return None if row is None else _preset(row)

    async def by_value(self, value: str) -> ModelPreset | None:
        """The preset of a model string (what sessions and spaces store), if there is one."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM model_presets WHERE value = ?", (value,)
        )
        return None if row is None else _preset(row)

    async def create(
        self,
        label: str,
        value: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
    ) -> ModelPreset:
        """Add a preset; ConflictError when the model value is already listed."""
        now = utcnow()
        try:
            preset_id = await self._db.insert(
                "INSERT INTO model_presets (label, value, created_at, api_base, api_key) "
                "VALUES (?, ?, ?, ?, ?)",
                (label, value, now, api_base, api_key),
            )
        except IntegrityError as exc:
            raise _duplicate(value) from exc
        return ModelPreset(preset_id, label, value, now, api_base, api_key)

    async def update(self, preset_id: int, changes: Mapping[str, str | None]) -> ModelPreset | None:
        """Apply `changes` (label, value, api_base, api_key; None clears the address or key);
        None when the preset does not exist."""
        unknown = set(changes) - EDITABLE
        if unknown:
            raise ValueError(f"not editable: {', '.join(sorted(unknown))}")
        if {"label", "value"} & {key for key, value in changes.items() if value is None}:
            raise ValueError("a preset's label and value cannot be cleared")
        # An edited connection is the editor's: it no longer follows LLM_MODEL.
        assignments = "".join(f", {key} = ?" for key in changes) + ", seeded = 0"
        try:
            async with self._db.transaction() as conn:
                cursor = await conn.execute(
                    f"UPDATE model_presets SET id = id{assignments} WHERE id = ?",
                    (*changes.values(), preset_id),
                )
                if cursor.rowcount == 0:
                    return None
        except IntegrityError as exc:
            raise _duplicate(str(changes.get("value") or "")) from exc
        return await self.get(preset_id)

    async def delete(self, preset_id: int) -> bool:
        """Remove a preset."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM model_presets WHERE id = ?", (preset_id,))
            return cursor.rowcount > 0

    async def keys(self) -> builtins.list[str]:
        """Every stored connection key (to mask them wherever text is logged)."""
        rows = await self._db.fetchall(
            "SELECT api_key FROM model_presets WHERE api_key IS NOT NULL AND api_key != ''"
        )
        return [row["api_key"] for row in rows]
