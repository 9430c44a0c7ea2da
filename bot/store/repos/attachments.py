"""Files attached to a session (Discord uploads, fetched documents): `attachment:<id>`."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from bot.store.engine.connection import utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row


@dataclass(frozen=True)
class Attachment:
    """Metadata of a stored file; the bytes are fetched separately."""

    id: str
    space_id: str
    session_id: str
    filename: str
    content_type: str
    size: int
    source_url: str | None
    created_at: str


_COLUMNS = "id, space_id, session_id, filename, content_type, size, source_url, created_at"


def _attachment(row: Row) -> Attachment:
    return Attachment(
        id=row["id"],
        space_id=row["space_id"],
        session_id=row["session_id"],
        filename=row["filename"],
        content_type=row["content_type"],
        size=row["size"],
        source_url=row["source_url"],
        created_at=row["created_at"],
    )


class AttachmentRepository:
    """Stores and reads the attachments of a space's sessions."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        space: str,
        session_id: str,
        filename: str,
        content_type: str,
        data: bytes,
        *,
        source_url: str | None = None,
    ) -> Attachment:
        """Store a file for a session and return its metadata (with a fresh random id)."""
        attachment = Attachment(
            id=secrets.token_hex(8),
            space_id=space,
            session_id=session_id,
            filename=filename,
            content_type=content_type,
            size=len(data),
            source_url=source_url,
            created_at=utcnow(),
        )
        await self._db.execute(
            f"INSERT INTO attachments ({_COLUMNS}, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                attachment.id,
                space,
                session_id,
                filename,
                content_type,
                attachment.size,
                source_url,
                attachment.created_at,
                data,
            ),
        )
        return attachment

    async def get(
        self, space: str, session_id: str, attachment_id: str
    ) -> tuple[Attachment, bytes] | None:
        """The attachment and its bytes, only if it belongs to `session_id` in `space`."""
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS}, data FROM attachments WHERE space_id = ? AND session_id = ? "
            "AND id = ?",
            (space, session_id, attachment_id),
        )
        if row is None:
            return None
        return _attachment(row), bytes(row["data"])

    async def list_for_session(self, space: str, session_id: str) -> list[Attachment]:
        """Metadata of every attachment of a session, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM attachments WHERE space_id = ? AND session_id = ? "
            "ORDER BY created_at",
            (space, session_id),
        )
        return [_attachment(row) for row in rows]
