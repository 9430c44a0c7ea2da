"""Model presets: the choices offered in the model pickers (label → model string)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from bot.errors import ConflictError
from bot.store.db import Database, IntegrityError, Row, utcnow

log = logging.getLogger(__name__)
# Model strings name their provider first ("ollama/qwen3:8b"); the label is the model's own name.
_PROVIDER_PREFIX_SEPARATOR = "/"


@dataclass(frozen=True)
class ModelPreset:
    """One selectable model."""

    id: int
    label: str
    value: str
    created_at: str


_COLUMNS = "id, label, value, created_at"


def _preset(row: Row) -> ModelPreset:
    return ModelPreset(
        id=row["id"], label=row["label"], value=row["value"], created_at=row["created_at"]
    )


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
        """Add `model` as the first preset when there are none at all; None when there were.

        Run at start, so that choosing a model works out of the box; an operator who deletes
        every preset gets the configured model back at the next start.
        """
        label = model.partition(_PROVIDER_PREFIX_SEPARATOR)[2] or model
        now = utcnow()
        async with self._db.transaction() as conn:
            # One statement, so processes starting together over one database add it once.
            preset_id = await conn.insert(
                "INSERT INTO model_presets (label, value, created_at) "
                "SELECT ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM model_presets)",
                (label, model, now),
            )
            if preset_id == 0:
                return None
        log.info("added the configured model %s as the first model preset", model)
        return ModelPreset(preset_id, label, model, now)

    async def get(self, preset_id: int) -> ModelPreset | None:
        """One preset by id."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM model_presets WHERE id = ?", (preset_id,)
        )
        return None if row is None else _preset(row)

    async def create(self, label: str, value: str) -> ModelPreset:
        """Add a preset; ConflictError when the model value is already listed."""
        now = utcnow()
        try:
            preset_id = await self._db.insert(
                "INSERT INTO model_presets (label, value, created_at) VALUES (?, ?, ?)",
                (label, value, now),
            )
        except IntegrityError as exc:
            raise _duplicate(value) from exc
        return ModelPreset(preset_id, label, value, now)

    async def update(
        self, preset_id: int, *, label: str | None = None, value: str | None = None
    ) -> ModelPreset | None:
        """Change a preset's label and/or value; None when it does not exist."""
        try:
            async with self._db.transaction() as conn:
                cursor = await conn.execute(
                    "UPDATE model_presets SET label = COALESCE(?, label), "
                    "value = COALESCE(?, value) WHERE id = ?",
                    (label, value, preset_id),
                )
                if cursor.rowcount == 0:
                    return None
        except IntegrityError as exc:
            raise _duplicate(value or "") from exc
        return await self.get(preset_id)

    async def delete(self, preset_id: int) -> bool:
        """Remove a preset."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM model_presets WHERE id = ?", (preset_id,))
            return cursor.rowcount > 0
