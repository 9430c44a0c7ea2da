"""Model presets: the choices offered in the model pickers (label → model string)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from bot.errors import ConflictError
from bot.store.db import Database, utcnow


@dataclass(frozen=True)
class ModelPreset:
    """One selectable model."""

    id: int
    label: str
    value: str
    created_at: str


_COLUMNS = "id, label, value, created_at"


def _preset(row: sqlite3.Row) -> ModelPreset:
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
            preset_id = await self._db.execute(
                "INSERT INTO model_presets (label, value, created_at) VALUES (?, ?, ?)",
                (label, value, now),
            )
        except sqlite3.IntegrityError as exc:
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
        except sqlite3.IntegrityError as exc:
            raise _duplicate(value or "") from exc
        return await self.get(preset_id)

    async def delete(self, preset_id: int) -> bool:
        """Remove a preset."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM model_presets WHERE id = ?", (preset_id,))
            return cursor.rowcount > 0
