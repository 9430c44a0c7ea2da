"""The read_note / write_note tools over the shared notes of the conversation's space, and the
notes_updated event hook. The space is injected by the engine, never chosen by the model."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Literal

from bot.errors import ConflictError, ToolError, UserFacingError
from bot.memory.notes import NotePage, NotesService
from bot.tools.core import ToolDisplay, ToolRegistry
from bot.tools.room import ResultRoom, longest_fit, room_for
from bot.turn.events import NotesUpdatedEvent
from bot.turn.hooks import Emit, ToolOutcome

log = logging.getLogger(__name__)

# One read stays below the engine's 6,000-character cap on unpaged results, header included.
READ_CHUNK_CHARS = 5000
MAX_READ_CHARS = 6000
LISTED_TITLES = 30
NOTE_ICON = "📝"

# The line closing a part of a page: where the part ends.
_CHUNK_END = re.compile(r"\n\[characters \d+–(\d+) of \d+[^\n]*\]$")

WriteMode = Literal["append", "replace", "create"]
WriteListener = Callable[[str | None], None]


def _not_found(title: str, pages: list[NotePage]) -> str:
    names = ", ".join(repr(page.title) for page in pages[:LISTED_TITLES])
    more = f" (and {len(pages) - LISTED_TITLES} more)" if len(pages) > LISTED_TITLES else ""
    listing = f" Existing pages: {names}{more}." if pages else " There are no pages yet."
    return (
        f"No note page titled {title.strip()!r}.{listing} "
        "Use write_note with mode 'create' to start a new page."
    )


def render_page(page: NotePage, offset: int = 0, room: ResultRoom | None = None) -> str:
    """A page as read_note returns it: header, up to READ_CHUNK_CHARS of body (fewer when the
    `room` left for the result is smaller), and where to continue."""
    section = f", section {page.section!r}" if page.section else ""
    header = f"# {page.title} (note page #{page.id}{section})"
    if not page.content:
        return f"{header}\n(This page is empty.)"
    total = len(page.content)
    start = max(0, min(offset, total))

    def render(size: int) -> str:
        end = min(total, start + size)
        body = page.content[start:end]
        if start == 0 and end == total:
            return f"{header}\n{body}"
        more = f" — call read_note with offset={end} for more" if end < total else ""
        return f"{header}\n{body}\n[characters {start + 1}–{end} of {total}{more}]"

    fitted = longest_fit(room_for(room, MAX_READ_CHARS), READ_CHUNK_CHARS, render)
    if not fitted and start < total:
        raise ToolError("No room is left in the context window for this page.", as_json=True)
    return render(fitted or 0)


def read_note_resume(arguments: dict[str, Any], body: str, kept: int) -> dict[str, Any] | None:
    """The read_note call that goes on after `kept` characters of a page read with `arguments`
    (its first line is the page's header); None for the list of titles."""
    title = arguments.get("title")
    offset = arguments.get("offset", 0)
    header, newline, _ = body.partition("\n")
    if not isinstance(title, str) or not title.strip() or not newline:
        return None
    if type(offset) is not int or not header.startswith("# "):
        return None
    resumed = max(0, offset) + max(0, kept - len(header) - 1)
    chunk = _CHUNK_END.search(body)
    if chunk is not None:
        resumed = min(resumed, int(chunk.group(1)))  # a cut inside the closing line
    return {"title": title, "offset": resumed}


def list_titles(pages: list[NotePage], offset: int, room: ResultRoom) -> str:
    """Every page's title (from the `offset`-th on, as many as fit `room`) and where to go on."""
    lines = [
        f"- {page.title} (#{page.id}" + (f", section {page.section!r})" if page.section else ")")
        for page in pages[offset:]
    ]
    if not lines:
        return "There are no note pages." if not pages else "No more note pages."

    def render(count: int) -> str:
        end = offset + count
        more = f"\n[call read_note with an empty title and offset={end} for more]"
        return (
            "Shared note pages:\n" + "\n".join(lines[:count]) + (more if count < len(lines) else "")
        )

    count = longest_fit(room, len(lines), render)
    if not count:
        raise ToolError("No room is left in the context window for the list.", as_json=True)
    return render(count)


def _space(space_id: str | None) -> str:
    if not space_id:
        raise ToolError("The notes are not available outside a conversation.", as_json=True)
    return space_id


class _NoteTools:
    """The handlers, bound to one NotesService."""

    def __init__(self, notes: NotesService, on_write: WriteListener | None) -> None:
        self._notes = notes
        self._on_write = on_write

    async def read_note(
        self,
        title: str,
        offset: int = 0,
        space_id: str | None = None,
        result_room: ResultRoom | None = None,
    ) -> str:
        """Read a shared note page's full text (the prompt lists only titles and 40 characters).

        Not needed for pages marked as linked: their text is already in the context.

        Args:
            title: The page title exactly as listed in the shared notes (or its id, e.g. "#3");
                empty to list every page.
            offset: Character offset to continue a long page from (given by the previous read).
        """
        space = _space(space_id)
        if not title.strip():
            pages = await self._notes.list_pages(space)
            return list_titles(pages, max(0, offset), room_for(result_room, MAX_READ_CHARS))
        page = await self._notes.find(space, title)
        if page is None:
            raise ToolError(_not_found(title, await self._notes.list_pages(space)), as_json=True)
        return render_page(page, offset, result_room)

    async def write_note(
        self,
        title: str,
        content: str,
        mode: WriteMode = "append",
        section: str = "",
        *,
        session_id: str | None = None,
        space_id: str | None = None,
    ) -> str:
        """Write to the shared notes that users and you edit together.

        Use it when the user asks you to note, record or update something in the notes.

        Args:
            title: Page title (or id such as "#3" for an existing page).
            content: Text to add (append), the complete new text (replace) or the first text
                of a new page (create). Markdown is fine.
            mode: "append" adds to the end of an existing page, "replace" overwrites its text,
                "create" makes a new page.
            section: Section (tab group) for a new page; for an existing page, moves it there.
        """
        space = _space(space_id)
        try:
            page = await self._write(space, title, content, mode, section)
        except ConflictError:
            raise ToolError(
                f"A note page titled {title.strip()!r} already exists. "
                "Use mode 'append' to add to it or 'replace' to overwrite it.",
                as_json=True,
            ) from None
        except UserFacingError as exc:
            raise ToolError(str(exc), as_json=True) from None
        if self._on_write is not None:
            try:
                self._on_write(session_id)
            except Exception:
                log.exception("note write listener failed")
        return (
            f"Saved note page {page.title!r} (#{page.id}, mode {mode}); "
            f"it now has {len(page.content):,} characters."
        )

    async def _write(
        self, space: str, title: str, content: str, mode: str, section: str
    ) -> NotePage:
        if mode == "create":
            return await self._notes.create(space, title, content, section)
        if mode not in ("append", "replace"):
            raise UserFacingError(f"Unknown mode {mode!r}: use 'append', 'replace' or 'create'.")
        page = await self._notes.find(space, title)
        if page is None:
            raise UserFacingError(_not_found(title, await self._notes.list_pages(space)))
        if mode == "append":
            page = await self._notes.append(space, page.id, content)
        else:
            page = await self._notes.update(space, page.id, content=content)
        if section.strip() and section.strip() != page.section:
            await self._notes.set_section(space, page.id, section)
        return page


def _label(action: str, arguments: dict[str, Any]) -> str:
    return f"{action}: {str(arguments.get('title', ''))[:80]}"


def _read_label(arguments: dict[str, Any]) -> str:
    return _label("read_note", arguments)


def _write_label(arguments: dict[str, Any]) -> str:
    return _label(f"write_note ({arguments.get('mode', 'append')})", arguments)


def register_notes_tools(
    registry: ToolRegistry, notes: NotesService, on_write: WriteListener | None = None
) -> None:
    """Offer read_note and write_note; `on_write(session_id)` runs after every saved write."""
    tools = _NoteTools(notes, on_write)
    registry.register(
        tools.read_note, display=ToolDisplay(NOTE_ICON, _read_label), resume=read_note_resume
    )
    registry.register(
        tools.write_note, display=ToolDisplay(NOTE_ICON, _write_label), confirm="note_writes"
    )


class NotesUpdatedHook:
    """ToolHook: emits NotesUpdatedEvent after a successful write_note."""

    def __init__(self, tool_name: str = "write_note") -> None:
        self._tool_name = tool_name

    async def __call__(self, outcome: ToolOutcome, emit: Emit) -> None:
        """Tell the front ends to refresh their notes."""
        if outcome.name == self._tool_name and not outcome.result.failed:
            emit(NotesUpdatedEvent())
