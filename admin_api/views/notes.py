"""Shared notes: pages CRUD, section rename, drag-and-drop reorder, per-session links."""

from __future__ import annotations

from admin_api.context import AdminContext
from admin_api.deps import AdminDeps
from admin_api.errors import ApiError, not_found
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import (
    DeletedOut,
    IdPath,
    NoteCreateIn,
    NoteListOut,
    NoteOut,
    NoteReorderIn,
    NoteUpdateIn,
    RenamedOut,
    SectionRenameIn,
    SessionNotesIn,
    SessionNotesOut,
    SessionPath,
)
from bot.memory.notes import NotePage, NotesService

TAG = "notes"


def notes_of(ctx: AdminContext) -> NotesService:
    """The notes service (its routes are registered only when there is one)."""
    if ctx.deps.notes is None:  # pragma: no cover - routes absent without the service
        raise ApiError(503, "unavailable", "Shared notes are not available.")
    return ctx.deps.notes


def _page(page: NotePage) -> NoteOut:
    return NoteOut.model_validate(page, from_attributes=True)


async def _get(notes: NotesService, page_id: int) -> NoteOut:
    page = await notes.get(page_id)
    if page is None:
        raise not_found(f"Note page {page_id}")
    return _page(page)


async def list_notes(call: In[Empty, Empty, Empty]) -> NoteListOut:
    """Every page in position order."""
    pages = await notes_of(call.ctx).list_pages()
    return NoteListOut(pages=[_page(page) for page in pages])


async def create_note(call: In[NoteCreateIn, Empty, Empty]) -> NoteOut:
    """Create a page at the end of its section."""
    body = call.body
    page = await notes_of(call.ctx).create(body.title, body.content, body.section)
    return _page(page)


async def get_note(call: In[Empty, Empty, IdPath]) -> NoteOut:
    """One page."""
    return await _get(notes_of(call.ctx), call.path.id)


async def update_note(call: In[NoteUpdateIn, Empty, IdPath]) -> NoteOut:
    """Change a page's title, body and/or section."""
    notes, body, page_id = notes_of(call.ctx), call.body, call.path.id
    await _get(notes, page_id)
    if body.title is not None or body.content is not None:
        await notes.update(page_id, title=body.title, content=body.content)
    if body.section is not None:
        await notes.set_section(page_id, body.section)
    return await _get(notes, page_id)


async def delete_note(call: In[Empty, Empty, IdPath]) -> DeletedOut:
    """Delete a page."""
    notes, page_id = notes_of(call.ctx), call.path.id
    await _get(notes, page_id)
    await notes.delete(page_id)
    return DeletedOut(deleted=1)


async def rename_section(call: In[SectionRenameIn, Empty, Empty]) -> RenamedOut:
    """Rename a section on every page in it."""
    renamed = await notes_of(call.ctx).rename_section(call.body.old, call.body.new)
    return RenamedOut(renamed=renamed)


async def reorder_notes(call: In[NoteReorderIn, Empty, Empty]) -> NoteListOut:
    """Apply a full new order (must be exactly the set of all page ids)."""
    notes, body = notes_of(call.ctx), call.body
    await notes.reorder(body.page_id, body.section, list(body.order))
    return NoteListOut(pages=[_page(page) for page in await notes.list_pages()])


async def get_session_notes(call: In[Empty, Empty, SessionPath]) -> SessionNotesOut:
    """The pages linked to a session (their bodies go into its prompt)."""
    session_id = call.path.session_id
    await _require_session(call.ctx, session_id)
    page_ids = await notes_of(call.ctx).linked_page_ids(session_id)
    return SessionNotesOut(session_id=session_id, page_ids=list(page_ids))


async def put_session_notes(call: In[SessionNotesIn, Empty, SessionPath]) -> SessionNotesOut:
    """Replace the pages linked to a session."""
    session_id, notes = call.path.session_id, notes_of(call.ctx)
    await _require_session(call.ctx, session_id)
    await notes.set_links(session_id, list(call.body.page_ids))
    return SessionNotesOut(
        session_id=session_id, page_ids=list(await notes.linked_page_ids(session_id))
    )


async def _require_session(ctx: AdminContext, session_id: str) -> None:
    if await ctx.services.repos.sessions.get(session_id) is None:
        raise not_found(f"Session {session_id!r}")


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Notes routes (none without a notes service)."""
    if deps.notes is None:
        return []
    return [
        Route(
            method="GET",
            path="/api/notes",
            handler=list_notes,
            summary="List note pages",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=Empty,
            response=NoteListOut,
        ),
        Route(
            method="POST",
            path="/api/notes",
            handler=create_note,
            summary="Create a note page",
            tag=TAG,
            body=NoteCreateIn,
            query=Empty,
            params=Empty,
            response=NoteOut,
            status=201,
        ),
        Route(
            method="POST",
            path="/api/notes/sections/rename",
            handler=rename_section,
            summary="Rename a section",
            tag=TAG,
            body=SectionRenameIn,
            query=Empty,
            params=Empty,
            response=RenamedOut,
        ),
        Route(
            method="POST",
            path="/api/notes/reorder",
            handler=reorder_notes,
            summary="Reorder pages (and move one to a section)",
            tag=TAG,
            body=NoteReorderIn,
            query=Empty,
            params=Empty,
            response=NoteListOut,
        ),
        Route(
            method="GET",
            path="/api/notes/{id}",
            handler=get_note,
            summary="Get a note page",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=NoteOut,
        ),
        Route(
            method="PATCH",
            path="/api/notes/{id}",
            handler=update_note,
            summary="Update a note page",
            tag=TAG,
            body=NoteUpdateIn,
            query=Empty,
            params=IdPath,
            response=NoteOut,
        ),
        Route(
            method="DELETE",
            path="/api/notes/{id}",
            handler=delete_note,
            summary="Delete a note page",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=IdPath,
            response=DeletedOut,
        ),
        Route(
            method="GET",
            path="/api/sessions/{session_id}/notes",
            handler=get_session_notes,
            summary="Pages linked to a session",
            tag=TAG,
            body=Empty,
            query=Empty,
            params=SessionPath,
            response=SessionNotesOut,
        ),
        Route(
            method="PUT",
            path="/api/sessions/{session_id}/notes",
            handler=put_session_notes,
            summary="Replace the pages linked to a session",
            tag=TAG,
            body=SessionNotesIn,
            query=Empty,
            params=SessionPath,
            response=SessionNotesOut,
        ),
    ]
