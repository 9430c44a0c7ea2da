"""Spaces (tenancy): the community a row belongs to, the id format and the scope of a query.

A space id is a short text key: `guild:<guild id>` for a Discord server, `dm:<user id>` for one
user's direct messages, `local:<name>` for the terminal chat and the admin API's chat. Every
community row carries one (`space_id`) and every repository query filters on it. Operator
paths that need every space pass `ALL_SPACES` explicitly (see `in_space`).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final, Literal

from bot.errors import ValidationError

SpaceKind = Literal["guild", "dm", "local"]
KINDS: Final = ("guild", "dm", "local")
DEFAULT_LOCAL_NAME: Final = "local"
LOCAL_NAME_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"

_LOCAL_NAME = re.compile(LOCAL_NAME_PATTERN)
_SNOWFLAKE = re.compile(r"^[0-9]{1,20}$")


class AllSpaces(enum.Enum):
    """The operator's scope: every space at once (admin API listings, maintenance jobs)."""

    ALL = "all"


ALL_SPACES: Final = AllSpaces.ALL
# What operator-level reads accept: one space id, or ALL_SPACES.
SpaceScope = str | Literal[AllSpaces.ALL]


@dataclass(frozen=True)
class Space:
    """A parsed space id: its kind, the Discord id behind it (guild or user) and a name."""

    id: str
    kind: SpaceKind
    discord_id: int | None
    name: str

    @property
    def dirname(self) -> str:
        """The id as a safe directory name (`guild:123` → `guild_123`)."""
        return space_dirname(self.id)


def guild_space(guild_id: int) -> str:
    """The space id of a Discord server."""
    return f"guild:{int(guild_id)}"


def dm_space(user_id: int | str) -> str:
    """The space id of one user's direct messages."""
    return f"dm:{int(user_id)}"


def local_space(name: str = DEFAULT_LOCAL_NAME) -> str:
    """The space id of a local chat (terminal, admin API); ValidationError for a bad name."""
    if not _LOCAL_NAME.match(name):
        raise ValidationError(
            f"A local space name is 1-64 letters, digits, '-' or '_' (got {name!r})."
        )
    return f"local:{name}"


def conversation_space(guild_id: int | None, user_id: int) -> str:
    """The space of a Discord conversation: its server, or the user's DMs outside servers."""
    return guild_space(guild_id) if guild_id is not None else dm_space(user_id)


def parse_space(space_id: str) -> Space:
    """The Space behind an id; ValidationError for anything that is not a space id."""
    kind, sep, rest = str(space_id).partition(":")
    if sep and kind in ("guild", "dm") and _SNOWFLAKE.match(rest):
        discord_id = int(rest)
        if kind == "guild":
            return Space(guild_space(discord_id), "guild", discord_id, rest)
        return Space(dm_space(discord_id), "dm", discord_id, rest)
    if sep and kind == "local" and _LOCAL_NAME.match(rest):
        return Space(space_id, "local", None, rest)
    raise ValidationError(
        f"Not a space id: {space_id!r} (expected guild:<id>, dm:<id> or local:<name>)."
    )


def is_space_id(space_id: str) -> bool:
    """Whether `space_id` is a well-formed space id."""
    try:
        parse_space(space_id)
    except ValidationError:
        return False
    return True


def space_dirname(space_id: str) -> str:
    """A directory name for a space: its id with ':' replaced (ids hold no other separator)."""
    return parse_space(space_id).id.replace(":", "_")


def in_space(scope: SpaceScope, column: str = "space_id") -> tuple[str, tuple[str, ...]]:
    """A WHERE fragment and its parameters limiting `column` to `scope` ("TRUE" for ALL_SPACES)."""
    if scope is ALL_SPACES:
        return "TRUE", ()
    if not isinstance(scope, str) or not scope:
        raise TypeError(f"a space id or ALL_SPACES is required, got {scope!r}")
    return f"{column} = ?", (scope,)
