"""Which knowledge-base files a space may see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.store.spaces import parse_space, space_dirname


class HasPath(Protocol):
    """A knowledge-base document: its path inside the knowledge base."""

    @property
    def path(self) -> str:
        """Relative, '/'-separated."""
        ...


WEB_SEARCH_FOLDER = "web_search"
SPACES_FOLDER = "spaces"


def visible_in(path: str, space: str) -> bool:
    """Whether the knowledge-base file at `path` (relative, '/'-separated) may be shown in
    `space`: shared files always; `web_search/<dir>/…` and `spaces/<dir or guild id>/…` only
    in their own space; anything else under those two folders never."""
    return Visibility.of(space).allows(path)


@dataclass(frozen=True)
class Visibility:
    """The folders one space may see, worked out once per search (paths are checked often)."""

    web: str
    spaces: frozenset[str]

    @classmethod
    def of(cls, space: str) -> Visibility:
        parsed = parse_space(space)
        names = {space_dirname(space)}
        if parsed.kind == "guild":
            names.add(str(parsed.discord_id))
        return cls(space_dirname(space), frozenset(names))

    def allows(self, path: str) -> bool:
        top, _, rest = path.partition("/")
        if top not in (WEB_SEARCH_FOLDER, SPACES_FOLDER):
            return True
        folder, sep, _ = rest.partition("/")
        if not sep:
            return False
        return folder == self.web if top == WEB_SEARCH_FOLDER else folder in self.spaces


def visible_flags(space: str, docs: Sequence[HasPath]) -> tuple[bool, ...]:
    """One flag per document: may `space` see it (a tuple: kept per space, and the garbage
    collector stops tracking a tuple of flags)."""
    visible = Visibility.of(space)
    return tuple([visible.allows(doc.path) for doc in docs])
