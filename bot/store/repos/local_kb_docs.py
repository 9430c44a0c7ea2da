"""The embedding cache of the local Markdown knowledge base (table local_knowledge_docs)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KBDocRow:
    """One knowledge-base file as cached: its hash and, when embedded, its vector."""

    path: str
    title: str
    content_hash: str
    embedding: list[float] | None
    embed_model: str | None
    updated_at: str = ""


def _decode(raw: str | None, path: str) -> list[float] | None:
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        log.warning("unreadable cached embedding for %s; it will be re-embedded", path)
        return None
    if not isinstance(value, list) or not all(isinstance(x, int | float) for x in value):
        log.warning("malformed cached embedding for %s; it will be re-embedded", path)
        return None
    return [float(x) for x in value]


class LocalKBDocRepository:
    """Reads and replaces rows of local_knowledge_docs, keyed by relative path."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def all(self) -> list[KBDocRow]:
        """Every cached document, by path."""
        rows = await self._db.fetchall(
            "SELECT path, title, content_hash, embedding_json, embed_model, updated_at"
            " FROM local_knowledge_docs ORDER BY path"
        )
        return [
            KBDocRow(
                path=str(row["path"]),
                title=str(row["title"]),
                content_hash=str(row["content_hash"]),
                embedding=_decode(row["embedding_json"], str(row["path"])),
                embed_model=row["embed_model"],
                updated_at=str(row["updated_at"]),
            )
            for row in rows
        ]

    async def apply(self, upserts: Sequence[KBDocRow], deleted_paths: Sequence[str]) -> None:
        """Upsert rows (old vectors overwritten) and delete paths, in one transaction."""
        if not upserts and not deleted_paths:
            return
        now = utcnow()
        async with self._db.transaction() as conn:
            if deleted_paths:
                await conn.executemany(
                    "DELETE FROM local_knowledge_docs WHERE path = ?",
                    [(path,) for path in deleted_paths],
                )
            if upserts:
                await conn.executemany(
                    "INSERT INTO local_knowledge_docs"
                    " (path, title, content_hash, embedding_json, embed_model, updated_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT(path) DO UPDATE SET title = excluded.title,"
                    " content_hash = excluded.content_hash,"
                    " embedding_json = excluded.embedding_json,"
                    " embed_model = excluded.embed_model, updated_at = excluded.updated_at",
                    [
                        (
                            row.path,
                            row.title,
                            row.content_hash,
                            None if row.embedding is None else json.dumps(row.embedding),
                            row.embed_model,
                            now,
                        )
                        for row in upserts
                    ],
                )
