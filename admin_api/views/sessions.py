"""Sessions: list, one, messages (archived included), delete, export and import."""

from __future__ import annotations

from typing import Annotated

from aiohttp import web
from pydantic import Field

from admin_api.errors import not_found
from admin_api.routing import Route, render
from admin_api.schemas.common import DeletedOut, Limit, Page, SessionId, SpaceId, scope_of
from admin_api.schemas.sessions import ImportOut, MessageListOut
from bot.services import Services
from bot.store.repos.sessions import Session
from bot.store.spaces import ALL_SPACES
from bot.store.transfer import SessionExport

Before = Annotated[str, Field(max_length=64)]


async def list_sessions(
    services: Services,
    limit: Limit = 50,
    before: Before | None = None,
    space: SpaceId | None = None,
) -> Page[Session, str]:
    """List sessions, most recently active first (one space's with `space`).

    Pass `next_cursor` back as `before`.
    """
    rows = await services.repos.sessions.list(scope_of(space), limit=limit, before=before)
    return Page.of(rows, limit, rows[-1].updated_at if rows else None)


async def get_session(services: Services, session_id: SessionId) -> Session:
    """One session."""
    session = await services.repos.sessions.get(ALL_SPACES, session_id)
    if session is None:
        raise not_found(f"Session {session_id!r}")
    return session


async def delete_session(services: Services, session_id: SessionId) -> DeletedOut:
    """Delete a session with its messages, summaries and attachments."""
    session = await get_session(services, session_id)
    if not await services.repos.sessions.delete(session.space_id, session_id):
        raise not_found(f"Session {session_id!r}")
    return DeletedOut(deleted=1)


async def session_messages(services: Services, session_id: SessionId) -> MessageListOut:
    """A session's messages, archived included, in conversation order.

    Archived ones carry archived_at and the summary (memory) that replaced them.
    """
    session = await get_session(services, session_id)
    messages = await services.repos.messages.all_for_session(session.space_id, session_id)
    return MessageListOut(session_id=session_id, messages=messages)


async def export_session(
    services: Services, session_id: SessionId
) -> Annotated[web.StreamResponse, SessionExport]:
    """Export a session as JSON (offered as a download)."""
    session = await get_session(services, session_id)
    exported = await services.transfer.export_session(session.space_id, session_id)
    response = render(exported)
    response.headers["Content-Disposition"] = (
        f'attachment; filename="playchat-session-{exported.session.id}.json"'
    )
    return response


async def import_session(
    services: Services, body: SessionExport, as_new: bool = False, space: SpaceId | None = None
) -> ImportOut:
    """Import an exported session.

    An existing id is a 409 unless `as_new=true` (which imports a copy under a fresh id).
    It goes into `space` when given, else back into the space it was exported from, else the
    local space.
    """
    space = space or body.session.space_id or services.settings().local_space_id
    return ImportOut(session_id=await services.transfer.import_session(space, body, as_new=as_new))


def routes() -> list[Route]:
    """Session routes."""
    return [
        Route("GET", "/api/sessions", list_sessions),
        Route("POST", "/api/sessions/import", import_session, status=201, large_body=True),
        Route("GET", "/api/sessions/{session_id}", get_session),
        Route("DELETE", "/api/sessions/{session_id}", delete_session),
        Route("GET", "/api/sessions/{session_id}/messages", session_messages),
        Route("GET", "/api/sessions/{session_id}/export", export_session),
    ]
