"""The read_kb_file tool: a file of the local knowledge base by its path, paged as seed 000
pages its tools (an opaque continuation token bound to the tool and the file).

The space is injected by the engine (never taken from the model): shared files are read in
every space, `spaces/<guild id>/` and `web_search/<space>/` only in their own. Only files the
knowledge base's scan took can be read, by their exact path: nothing outside kb_dir, no hidden
files, no symlinks. The local-KB layer's marker for a cut file carries the token that reads
on from where the layer stopped (`continuation`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final, Protocol

from bot.config import Settings
from bot.errors import ToolError
from bot.tools.core import ToolDisplay, ToolRegistry, short_text
from bot.tools.paging import (
    InvalidTokenError,
    PageLimitError,
    fit_page,
    make_token,
    parse_token,
)
from bot.tools.room import ResultRoom, room_for

TOOL: Final = "read_kb_file"
# Characters of a file per result (scrape_url's default page), fewer when the room is smaller.
PAGE_CHARS: Final = 4000
KB_ICON: Final = "📖"
# A part's first line: "# Title (path), from character 1,201 of 20,000".
_PART_HEADER: Final = re.compile(r"\(([^()]+)\), from character ([\d,]+) of [\d,]+$")


class KBFile(Protocol):
    """What the reader needs of a knowledge-base file (bot.memory.local_kb.KBHit fits)."""

    @property
    def path(self) -> str:
        """Path inside the knowledge base."""
        ...

    @property
    def title(self) -> str:
        """The file's title."""
        ...

    @property
    def content(self) -> str:
        """The file's text."""
        ...


class KBFiles(Protocol):
    """The knowledge base as the reader uses it (bot.memory.local_kb.LocalKnowledgeBase)."""

    async def file(self, path: str, space: str) -> KBFile | None:
        """The file at `path` if `space` may see it."""
        ...


def read_kb_resume(arguments: dict[str, Any], body: str, kept: int) -> dict[str, Any] | None:
    """The read_kb_file call that goes on after `kept` characters of a part (its first line is
    the part's header, naming the file and where the part starts)."""
    header, newline, _ = body.partition("\n")
    match = _PART_HEADER.search(header)
    if match is None or not newline:
        return None
    start = int(match.group(2).replace(",", "")) - 1
    resumed = start + max(0, kept - len(header) - 1)
    try:
        return {"continue_from": continuation(match.group(1), resumed)}
    except ValueError:  # a path no token may carry (InvalidTokenError is one)
        return None


def continuation(path: str, offset: int) -> str:
    """The token that reads the file at `path` on from character `offset`."""
    return make_token(TOOL, path=path, offset=offset)


class KBFileReader:
    """The handler, bound to the knowledge base and the settings in effect."""

    def __init__(self, files: KBFiles, settings: Callable[[], Settings]) -> None:
        self._files = files
        self._settings = settings

    async def read_kb_file(
        self,
        path: str = "",
        continue_from: str | None = None,
        space_id: str | None = None,
        result_room: ResultRoom | None = None,
    ) -> str:
        """Read a local knowledge-base file in parts (has_more: pass next_token as continue_from).

        Args:
            path: The file's path, shown in brackets after its title.
            continue_from: A next_token from read_kb_file or a cut file's marker.
        """
        settings = self._settings()
        if not space_id:
            raise ToolError("The knowledge base is not available outside a conversation.")
        offset = 0
        if continue_from:
            try:
                payload = parse_token(continue_from, TOOL, max_age=settings.pagination_token_ttl)
            except InvalidTokenError as exc:
                raise ToolError(str(exc)) from None
            path, offset = payload["path"], payload["offset"]
        path = path.strip().removeprefix("./")
        found = await self._files.file(path, space_id) if path else None
        if found is None:
            raise ToolError(f"No knowledge-base file {path!r} here. Use a path the context shows.")
        text = found.content
        if offset >= len(text) and offset > 0:
            raise ToolError("The token points past the end of the file.")
        prefix = f"# {found.title} ({found.path}), from character {offset + 1:,} of {len(text):,}\n"

        def next_token(consumed: int) -> str | None:
            end = offset + consumed
            return continuation(found.path, end) if end < len(text) else None

        room = room_for(result_room, settings.max_tool_result_chars)
        try:
            page = fit_page(
                text[offset:],
                PAGE_CHARS,
                next_token,
                prefix=prefix,
                limit=room.chars,
                max_tokens=room.tokens,
            )
        except PageLimitError:
            raise ToolError("No room is left for a part of this file.") from None
        return page.text


def _label(arguments: dict[str, Any]) -> str:
    return f"{TOOL}: {short_text(arguments.get('path') or '…')}"


def register_kb_tools(
    registry: ToolRegistry, files: KBFiles, settings: Callable[[], Settings]
) -> None:
    """Offer read_kb_file."""
    registry.register(
        KBFileReader(files, settings).read_kb_file,
        paged=True,
        display=ToolDisplay(KB_ICON, _label),
        resume=read_kb_resume,
    )
