"""Per-model token-estimate corrections (table model_token_factors), kept across restarts."""

from __future__ import annotations

from dataclasses import dataclass

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database


@dataclass(frozen=True)
class StoredTokenFactor:
    """One model's learned factor: real prompt tokens per estimated token."""

    model: str
    factor: float
    samples: int
    # The server was seen reporting only the prompt tokens it did not have cached.
    partial_counts: bool = False


class TokenFactorRepository:
    """Reads and writes model_token_factors."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def all(self) -> list[StoredTokenFactor]:
        """Every stored factor."""
        rows = await self._db.fetchall(
            "SELECT model, factor, samples, partial_counts FROM model_token_factors"
        )
        return [
            StoredTokenFactor(
                model=row["model"],
                factor=float(row["factor"]),
                samples=int(row["samples"]),
                partial_counts=bool(row["partial_counts"]),
            )
            for row in rows
        ]

    async def save(self, value: StoredTokenFactor) -> None:
        """Insert or replace one model's factor."""
        await self._db.execute(
            "INSERT INTO model_token_factors (model, factor, samples, partial_counts, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(model) DO UPDATE SET factor = excluded.factor, "
            "samples = excluded.samples, partial_counts = excluded.partial_counts, "
            "updated_at = excluded.updated_at",
            (value.model, value.factor, value.samples, int(value.partial_counts), utcnow()),
        )
