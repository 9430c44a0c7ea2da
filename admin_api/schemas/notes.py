"""Shared notes: inputs and envelopes (a page is `bot.store.repos.notes.NotePage`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from admin_api.schemas.common import Body, RowId, SpaceId
from bot.memory.notes import MAX_CONTENT_CHARS, MAX_SECTION_CHARS, MAX_TITLE_CHARS, NotePage

NoteTitle = Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS)]
Section = Annotated[str, Field(max_length=MAX_SECTION_CHARS)]
NoteText = Annotated[str, Field(max_length=MAX_CONTENT_CHARS)]


class NoteListOut(BaseModel):
    """Every page in position order."""

    pages: list[NotePage]


class NoteCreateIn(Body):
    """A new page."""

    title: NoteTitle
    content: NoteText = ""
    section: Section = ""
    space_id: SpaceId | None = None  # default: the local space


class NoteUpdateIn(Body):
    """Changes to a page; omitted fields stay as they are."""

    title: NoteTitle | None = None
    content: NoteText | None = None
    section: Section | None = None


class SectionRenameIn(Body):
    """Rename a section on every page in it."""

    old: Section
    new: Section
    space_id: SpaceId | None = None  # default: the local space


class RenamedOut(BaseModel):
    """How many pages were renamed."""

    renamed: int


class NoteReorderIn(Body):
    """The full new order of page ids after a drag and drop; `page_id` moves to `section`."""

    page_id: RowId
    section: Section
    order: Annotated[list[RowId], Field(max_length=10_000)]


class SessionNotesIn(Body):
    """The pages whose bodies go into a session's prompt."""

    page_ids: Annotated[list[RowId], Field(max_length=100)]


class SessionNotesOut(BaseModel):
    """A session's linked pages."""

    session_id: str
    page_ids: list[int]
