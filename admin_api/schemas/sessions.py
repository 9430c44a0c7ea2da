"""Sessions: the message list envelope and the import result (rows are the store's)."""

from __future__ import annotations

from pydantic import BaseModel

from admin_api.schemas.rows import StoredMessageOut


class MessageListOut(BaseModel):
    """Every message of a session, archived ones included, in conversation order."""

    session_id: str
    messages: list[StoredMessageOut]


class ImportOut(BaseModel):
    """The imported session's id."""

    session_id: str
