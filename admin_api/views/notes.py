"""Shared notes: pages CRUD, section rename, drag-and-drop reorder, move, per-session links.

Pages belong to a space: listings take `?space=` (every space without it), a page found by id
is acted on in its own space, new pages go to the space named (the local space by default),
and a session's links are pages of that session's own space.
"""

from __future__ import annotations

from admin_api.errors import not_found
from admin_api.routing import Route
from admin_api.schemas.common import DeletedOut, RowId, SessionId, SpaceId
from admin_api.schemas.notes import (
    NoteCreateIn,
    NoteListOut,
    NoteReorderIn,
    NoteUpdateIn,
    RenamedOut,
    SectionRenameIn,
    SessionNotesIn,
    SessionNotesOut,
)
from admin_api.schemas.spaces import MoveIn
from bot.memory.notes import NotePage
from bot.services import Services
from bot.store.spaces import ALL_SPACES


def _space(services: Services, space: str | None) -> str:
    return services.settings().local_space_id if space is None else space


async def _get(services: Services, page_id: int) -> NotePage:
    space = await services.notes.space_of(page_id)
    page = None if space is None else await services.notes.get(space, page_id)
    if page is None:
        raise not_found(f"Note page {page_id}")
    return page


async def _session_space(services: Services, session_id: str) -> str:
    session = await services.repos.sessions.get(ALL_SPACES, session_id)
    if session is None:
        raise not_found(f"Session {session_id!r}")
    return session.space_id


async def list_notes(services: Services, space: SpaceId | None = None) -> NoteListOut:
    """List note pages in position order.

    One space's pages with `space`, else every space's (grouped by space).
    """
    notes = services.notes
    pages = await (notes.list_pages_all_spaces() if space is None else notes.list_pages(space))
    return NoteListOut(pages=pages)


async def create_note(services: Services, body: NoteCreateIn) -> NotePage:
    """Create a note page at the end of its section, in `space_id` (default: the local space)."""
    return await services.notes.create(
        _space(services, body.space_id), body.title, body.content, body.section
    )


async def get_note(services: Services, id: RowId) -> NotePage:
    """Get a note page."""
    return await _get(services, id)


async def update_note(services: Services, id: RowId, body: NoteUpdateIn) -> NotePage:
    """Update a note page's title, body and/or section."""
    notes = services.notes
    space = (await _get(services, id)).space_id
    if body.title is not None or body.content is not None:
        await notes.update(space, id, title=body.title, content=body.content)
    if body.section is not None:
        await notes.set_section(space, id, body.section)
    return await _get(services, id)


async def delete_note(services: Services, id: RowId) -> DeletedOut:
    """Delete a note page."""
    page = await _get(services, id)
    await services.notes.delete(page.space_id, id)
    return DeletedOut(deleted=1)


async def move_note(services: Services, id: RowId, body: MoveIn) -> NotePage:
    """Move a note page to another space (end of its section there).

    Its session links are dropped (they are conversations of the old space); 409 when the
    title is taken in the target space.
    """
    page = await _get(services, id)
    return await services.spaces.move_note(page.space_id, id, body.space_id)


async def rename_section(services: Services, body: SectionRenameIn) -> RenamedOut:
    """Rename a section on every page in it, in `space_id` (default: the local space)."""
    renamed = await services.notes.rename_section(
        _space(services, body.space_id), body.old, body.new
    )
    return RenamedOut(renamed=renamed)


async def reorder_notes(services: Services, body: NoteReorderIn) -> NoteListOut:
    """Reorder pages (and move one to a section).

    The order must be exactly the set of page ids of the moved page's space.
    """
    notes = services.notes
    space = (await _get(services, body.page_id)).space_id
    await notes.reorder(space, body.page_id, body.section, list(body.order))
    return NoteListOut(pages=await notes.list_pages(space))


async def get_session_notes(services: Services, session_id: SessionId) -> SessionNotesOut:
    """Pages linked to a session (their bodies go into its prompt)."""
    space = await _session_space(services, session_id)
    page_ids = await services.notes.linked_page_ids(space, session_id)
    return SessionNotesOut(session_id=session_id, page_ids=list(page_ids))


async def put_session_notes(
    services: Services, session_id: SessionId, body: SessionNotesIn
) -> SessionNotesOut:
    """Replace the pages linked to a session (pages of the session's space)."""
    notes = services.notes
    space = await _session_space(services, session_id)
    await notes.set_links(space, session_id, list(body.page_ids))
    page_ids = await notes.linked_page_ids(space, session_id)
    return SessionNotesOut(session_id=session_id, page_ids=list(page_ids))


def routes() -> list[Route]:
    """Notes routes."""
    return [
        Route("GET", "/api/notes", list_notes),
        Route("POST", "/api/notes", create_note, status=201),
        Route("POST", "/api/notes/sections/rename", rename_section),
        Route("POST", "/api/notes/reorder", reorder_notes),
        Route("GET", "/api/notes/{id}", get_note),
        Route("PATCH", "/api/notes/{id}", update_note),
        Route("DELETE", "/api/notes/{id}", delete_note),
        Route("POST", "/api/notes/{id}/move", move_note),
        Route("GET", "/api/sessions/{session_id}/notes", get_session_notes),
        Route("PUT", "/api/sessions/{session_id}/notes", put_session_notes),
    ]
