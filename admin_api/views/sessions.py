"""Sessions: list, one, messages (archived included), delete, export and import."""

from __future__ import annotations

from aiohttp import web

from admin_api.deps import AdminDeps
from admin_api.errors import not_found
from admin_api.routing import AnyRoute, Empty, In, Route, render
from admin_api.schemas import (
    DeletedOut,
    ImportOut,
    ImportQuery,
    MessageListOut,
    MessageOut,
    SessionListOut,
    SessionListQuery,
    SessionOut,
    SessionPath,
)
from bot.store.transfer import SessionExport

TAG = "sessions"


async def list_sessions(call: In[Empty, SessionListQuery, Empty]) -> SessionListOut:
    """Sessions, most recently active first."""
    query = call.query
    rows = await call.ctx.services.repos.sessions.list(limit=query.limit, before=query.before)
    items = [SessionOut.model_validate(row, from_attributes=True) for row in rows]
    next_cursor = items[-1].updated_at if len(items) == query.limit else None
    return SessionListOut(items=items, next_cursor=next_cursor)


async def get_session(call: In[Empty, Empty, SessionPath]) -> SessionOut:
    """One session."""
    session = await call.ctx.services.repos.sessions.get(call.path.session_id)
    if session is None:
        raise not_found(f"Session {call.path.session_id!r}")
    return SessionOut.model_validate(session, from_attributes=True)


async def delete_session(call: In[Empty, Empty, SessionPath]) -> DeletedOut:
    """Delete a session with its messages, summaries and attachments."""
    if not await call.ctx.services.repos.sessions.delete(call.path.session_id):
        raise not_found(f"Session {call.path.session_id!r}")
    return DeletedOut(deleted=1)


async def session_messages(call: In[Empty, Empty, SessionPath]) -> MessageListOut:
    """Every message, archived (summarised) ones included, in conversation order."""
    session_id = call.path.session_id
    repos = call.ctx.services.repos
    if await repos.sessions.get(session_id) is None:
        raise not_found(f"Session {session_id!r}")
    rows = await repos.messages.all_for_session(session_id)
    return MessageListOut(
        session_id=session_id,
        messages=[MessageOut.model_validate(row, from_attributes=True) for row in rows],
    )


async def export_session(call: In[Empty, Empty, SessionPath]) -> web.StreamResponse:
    """The session as a JSON document (offered as a download)."""
    exported = await call.ctx.transfer.export_session(call.path.session_id)
    response = render(exported)
    response.headers["Content-Disposition"] = (
        f'attachment; filename="playchat-session-{exported.session.id}.json"'
    )
    return response


async def import_session(call: In[SessionExport, ImportQuery, Empty]) -> ImportOut:
    """Store an exported session; an existing id is a 409 unless `as_new=true`."""
    session_id = await call.ctx.transfer.import_session(call.body, as_new=call.query.as_new)
    return ImportOut(session_id=session_id)


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Session routes."""
    return [
        Route(
            method="GET",
            path="/api/sessions",
            handler=list_sessions,
            summary="List sessions",
            tag=TAG,
            body=Empty,
            query=SessionListQuery,
            params=Empty,
            response=SessionListOut,
        ),
        Route(
            method="POST",
            path="/api/sessions/import",
            handler=import_session,
            summary="Import an exported session",
            tag=TAG,
            body=SessionExport,
            query=ImportQuery,
            params=Empty,
            response=ImportOut,
            status=201,
            large_body=True,
        ),
        Route(
            method="GET",
            path="/api/sessions/{session_id}",
            handler=get_session,
            summary="One session",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=SessionPath,
            response=SessionOut,
        ),
        Route(
            method="DELETE",
            path="/api/sessions/{session_id}",
            handler=delete_session,
            summary="Delete a session and everything in it",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=SessionPath,
            response=DeletedOut,
        ),
        Route(
            method="GET",
            path="/api/sessions/{session_id}/messages",
            handler=session_messages,
            summary="A session's messages, archived included",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=SessionPath,
            response=MessageListOut,
        ),
        Route(
            method="GET",
            path="/api/sessions/{session_id}/export",
            handler=export_session,
            summary="Export a session as JSON",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=SessionPath,
            response=SessionExport,
        ),
    ]
