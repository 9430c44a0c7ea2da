"""Recall's message embeddings (`message_embeddings`): what the background embedder reads and
writes, and a space's vectors for the query-time cosine ranking.

A vector is stored as its unit float32 bytes (`array('f')`, little-endian as every platform we
run on): 3 KB for 768 dimensions, read back without parsing.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.erase_lock import hold_against_erase

# The newest vectors of a space one ranking reads, at most (a bounded read whatever the
# history: 20,000 × 768 float32 are 60 MB).
VECTOR_WINDOW: Final = 20_000


@dataclass(frozen=True)
class Unembedded:
    """A visible message without a vector of the model yet."""

    id: int
    space_id: str
    content: str


@dataclass(frozen=True)
class StoredVector:
    """A message's unit vector in its space."""

    space_id: str
    message_id: int
    vector: Sequence[float]


def to_blob(vector: Sequence[float]) -> bytes:
    """`vector` as float32 bytes (little-endian)."""
    packed = array("f", vector)
    if sys.byteorder == "big":  # pragma: no cover - no big-endian host in use
        packed.byteswap()
    return packed.tobytes()


def from_blob(blob: bytes) -> array[float]:
    """Float32 bytes (little-endian) back as a vector."""
    packed = array("f")
    packed.frombytes(bytes(blob))
    if sys.byteorder == "big":  # pragma: no cover - no big-endian host in use
        packed.byteswap()
    return packed


class MessageEmbeddingRepository:
    """Messages still to embed, the vectors written for them, a space's vectors."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def newest_id_all_spaces(self) -> int:
        """The highest message id of any space (0 without messages): where a pass stops."""
        row = await self._db.fetchone("SELECT MAX(id) AS top FROM messages")
        return int(row["top"]) if row is not None and row["top"] is not None else 0

    async def unembedded_all_spaces(
        self, model: str, limit: int, *, above: int = 0, upto: int | None = None
    ) -> list[Unembedded]:
        """Visible messages of any space with an id in (`above`, `upto`] and no vector of
        `model`, newest first (a maintenance read: each row carries its space, and its vector
        stays there). `above` keeps the read to what came since the last complete pass."""
        rows = await self._db.fetchall(
            "SELECT m.id, m.space_id, m.content FROM messages m "
            "WHERE m.id > ? AND m.id <= ? AND m.recall_hidden = 0 "
            "AND m.role IN ('user', 'assistant') AND NOT EXISTS "
            "(SELECT 1 FROM message_embeddings e WHERE e.message_id = m.id AND e.model = ?) "
            "ORDER BY m.id DESC LIMIT ?",
            (above, upto if upto is not None else 2**62, model, max(limit, 0)),
        )
        return [
            Unembedded(int(row["id"]), str(row["space_id"]), str(row["content"])) for row in rows
        ]

    async def store(self, model: str, vectors: Sequence[StoredVector]) -> None:
        """Write the vectors of `model` (a row written twice is replaced); a message hidden or
        deleted meanwhile gets none."""
        if not vectors:
            return
        now = utcnow()
        async with self._db.transaction() as conn:
            for space in sorted({row.space_id for row in vectors}):
                await hold_against_erase(conn, space)  # an erase sets recall_hidden
            await conn.executemany(
                "DELETE FROM message_embeddings WHERE space_id = ? AND message_id = ? "
                "AND model = ?",
                [(row.space_id, row.message_id, model) for row in vectors],
            )
            visible = {
                (str(found["space_id"]), int(found["id"]))
                for found in await conn.execute_fetchall(
                    "SELECT space_id, id FROM messages WHERE recall_hidden = 0 AND id IN "
                    f"({', '.join('?' for _ in vectors)})",
                    tuple(row.message_id for row in vectors),
                )
            }
            await conn.executemany(
                "INSERT INTO message_embeddings (space_id, message_id, model, vector, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (row.space_id, row.message_id, model, to_blob(row.vector), now)
                    for row in vectors
                    if (row.space_id, row.message_id) in visible
                ],
            )

    async def has_any(self, space: str, model: str) -> bool:
        """Whether `space` holds any vector of `model`."""
        row = await self._db.fetchone(
            "SELECT 1 AS found FROM message_embeddings WHERE space_id = ? AND model = ? LIMIT 1",
            (space, model),
        )
        return row is not None

    async def vectors(
        self, space: str, model: str, *, limit: int = VECTOR_WINDOW
    ) -> list[tuple[int, bytes]]:
        """The newest `limit` vectors of `model` in `space` of visible messages, as
        (message id, float32 bytes)."""
        rows = await self._db.fetchall(
            "SELECT e.message_id, e.vector FROM message_embeddings e "
            "JOIN messages m ON m.id = e.message_id AND m.space_id = e.space_id "
            "WHERE e.space_id = ? AND e.model = ? AND m.recall_hidden = 0 "
            "ORDER BY e.message_id DESC LIMIT ?",
            (space, model, max(limit, 0)),
        )
        return [(int(row["message_id"]), bytes(row["vector"])) for row in rows]

    async def count(self, space: str) -> int:
        """How many vectors `space` holds (any model)."""
        row = await self._db.fetchone(
            "SELECT COUNT(*) AS n FROM message_embeddings WHERE space_id = ?", (space,)
        )
        return int(row["n"]) if row is not None else 0
