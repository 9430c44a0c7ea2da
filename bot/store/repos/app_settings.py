"""Runtime setting overrides (key → JSON value) edited from the admin API or Discord."""

from __future__ import annotations

import json
from typing import Any

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database


def _decoded(raw: str) -> Any:
    """A stored value, or the ValueError saying why its text is not JSON."""
    try:
        return json.loads(raw)
    except ValueError as exc:
        return exc


class AppSettingsRepository:
    """Reads and writes app_settings."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def all(self) -> dict[str, Any]:
        """Every stored override, decoded; a row whose text is not JSON (written by hand, or
        damaged) maps to the ValueError saying why, so that one bad row hides no other."""
        rows = await self._db.fetchall("SELECT key, value FROM app_settings")
        return {row["key"]: _decoded(str(row["value"])) for row in rows}

    async def set_many(self, values: dict[str, Any]) -> None:
        """Store overrides (None removes one) in one transaction."""
        now = utcnow()
        async with self._db.transaction() as conn:
            for key, value in values.items():
                if value is None:
                    await conn.execute("DELETE FROM app_settings WHERE key = ?", (key,))
                else:
                    await conn.execute(
                        "INSERT INTO app_settings (key, value, updated_at) VALUES (?, ?, ?) "
                        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, "
                        "updated_at = excluded.updated_at",
                        (key, json.dumps(value, ensure_ascii=False), now),
                    )
