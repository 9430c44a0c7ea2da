"""Spaces (tenancy): the community a row belongs to, the id format and the scope of a query.

A space id is a short text key: `guild:<guild id>` for a Discord server, `dm:<user id>` for one
user's direct messages, `local:<name>` for the terminal chat and the admin API's chat. Every
community row carries one (`space_id`) and every repository query filters on it. Operator
paths that need every space pass `ALL_SPACES` explicitly (see `in_space`).

Each id has exactly one spelling, and only that spelling parses: a Discord id is a snowflake in
ASCII decimal digits without leading zeros, 1 to 2^63 - 1 (the store keeps it in a signed 64-bit
INTEGER, and Discord's snowflakes stay below 2^63 until 2084). So `guild:01`, `guild:１２`,
`dm:18446744073709551616` or `guild:1\n` are refused at the boundary (`parse_space`,
`SpaceIdText` for pydantic models) instead of reaching a table as a second spelling of a space.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Annotated, Final, Literal

from pydantic import AfterValidator, Field

from bot.errors import ValidationError

SpaceKind = Literal["guild", "dm", "local"]
KINDS: Final = ("guild", "dm", "local")
DEFAULT_LOCAL_NAME: Final = "local"
LOCAL_NAME_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
# The largest Discord id a space can carry: the store's signed 64-bit INTEGER.
MAX_DISCORD_ID: Final = 2**63 - 1
# Every space id, as a JSON Schema pattern (the numeric bound is checked after it).
SPACE_ID_PATTERN: Final = (
    r"^(guild:[1-9][0-9]{0,18}|dm:[1-9][0-9]{0,18}|local:[A-Za-z0-9_-]{1,64})$"
)

# fullmatch, so a trailing newline (which `$` lets through) is refused; [0-9] is ASCII only.
_LOCAL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SNOWFLAKE = re.compile(r"[1-9][0-9]{0,18}")
_EXPECTED: Final = "expected guild:<id>, dm:<id> or local:<name>"


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


def _snowflake(value: int | str) -> int:
    """A Discord id the store can hold; ValidationError for anything else."""
    if isinstance(value, str):
        if not _SNOWFLAKE.fullmatch(value):
            raise ValidationError(f"Not a Discord id: {value!r}.")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_DISCORD_ID:
        raise ValidationError(f"Not a Discord id: {value!r}.")
    return value


def guild_space(guild_id: int) -> str:
    """The space id of a Discord server."""
    return f"guild:{_snowflake(guild_id)}"


def dm_space(user_id: int | str) -> str:
    """The space id of one user's direct messages."""
    return f"dm:{_snowflake(user_id)}"


def local_space(name: str = DEFAULT_LOCAL_NAME) -> str:
    """The space id of a local chat (terminal, admin API); ValidationError for a bad name."""
    if not isinstance(name, str) or not _LOCAL_NAME.fullmatch(name):
        raise ValidationError(
            f"A local space name is 1-64 letters, digits, '-' or '_' (got {name!r})."
        )
    return f"local:{name}"


def conversation_space(guild_id: int | None, user_id: int) -> str:
    """The space of a Discord conversation: its server, or the user's DMs outside servers."""
    return guild_space(guild_id) if guild_id is not None else dm_space(user_id)


def space_id_problem(space_id: object) -> str | None:
    """Why `space_id` is not a space id in its one spelling (None if it is); never echoes it."""
    if not isinstance(space_id, str):
        return f"a space id is text ({_EXPECTED})"
    kind, sep, rest = space_id.partition(":")
    if not sep or kind not in KINDS:
        return f"unknown kind of space ({_EXPECTED})"
    if kind == "local":
        return None if _LOCAL_NAME.fullmatch(rest) else "a local name is 1-64 of A-Z a-z 0-9 - _"
    if not _SNOWFLAKE.fullmatch(rest):
        return "a Discord id is ASCII digits without leading zeros"
    if int(rest) > MAX_DISCORD_ID:
        return f"a Discord id is at most {MAX_DISCORD_ID}"
    return None


def parse_space(space_id: str) -> Space:
    """The Space behind an id; ValidationError for anything that is not a space id."""
    problem = space_id_problem(space_id)
    if problem is not None:
        raise ValidationError(f"Not a space id: {space_id!r} ({problem}).")
    kind, _, rest = space_id.partition(":")
    if kind == "local":
        return Space(space_id, "local", None, rest)
    return Space(space_id, "guild" if kind == "guild" else "dm", int(rest), rest)


def _checked_space_id(value: str) -> str:
    problem = space_id_problem(value)
    if problem is not None:
        raise ValueError(problem)  # pydantic reports it with the field's location
    return value


# A space id in a pydantic model (API bodies and parameters, import files): refused with the
# field's name unless it is a space id in its one spelling.
SpaceIdText = Annotated[
    str,
    Field(pattern=SPACE_ID_PATTERN, examples=["guild:123456789012345678", "local:local"]),
    AfterValidator(_checked_space_id),
]


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
