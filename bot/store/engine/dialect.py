"""What differs between the store's two engines: URLs, bind markers, and rows.

The store writes SQL in the common subset of SQLite and PostgreSQL with `?` (or `:name`)
placeholders. SQLite's driver takes them as they are; for PostgreSQL they become `$1, $2, …`
(asyncpg's markers) here, skipping quoted text, once per statement text (cached).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal, overload

Dialect = Literal["sqlite", "postgresql"]
Params = Sequence[Any] | Mapping[str, Any]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SQLITE_PREFIX: Final = "sqlite:///"
POSTGRES_PREFIXES: Final = ("postgresql://", "postgres://", "postgresql+asyncpg://")
NUL: Final = "\x00"
REPLACEMENT: Final = "\ufffd"


def like_pattern(text: str) -> str:
    """`%text%` for `LIKE ? ESCAPE '\\'`, with `\\`, `%` and `_` in `text` matched as themselves."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def sqlite_url(path: Path | str) -> str:
    """The DATABASE_URL naming the SQLite file at `path`."""
    return f"{SQLITE_PREFIX}{path}"


def dialect_of(url: str) -> Dialect:
    """Which engine a DATABASE_URL names; ValueError for anything else."""
    if url.startswith(SQLITE_PREFIX):
        return "sqlite"
    if url.startswith(POSTGRES_PREFIXES):
        return "postgresql"
    raise ValueError(
        f"DATABASE_URL must start with sqlite:/// or postgresql://, got {redact(url)!r}"
    )


def sqlite_path(url: str) -> Path:
    """The file a sqlite:/// URL names."""
    return Path(url.removeprefix(SQLITE_PREFIX))


def asyncpg_url(url: str) -> str:
    """A postgresql:// URL as SQLAlchemy's asyncpg driver URL."""
    for prefix in POSTGRES_PREFIXES:
        if url.startswith(prefix):
            return "postgresql+asyncpg://" + url.removeprefix(prefix)
    raise ValueError(f"not a PostgreSQL URL: {redact(url)!r}")


def redact(url: str) -> str:
    """`url` without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


@functools.lru_cache(maxsize=1024)
def _numbered(sql: str) -> tuple[str, tuple[str, ...] | int]:
    """`sql` with `?` or `:name` turned into `$n`; the names in order, or how many `?`."""
    out: list[str] = []
    names: list[str] = []
    positional = 0
    quote: str | None = None
    i = 0
    while i < len(sql):
        char = sql[i]
        if quote is not None:
            out.append(char)
            if char == quote:
                quote = None
        elif char in ("'", '"'):
            quote = char
            out.append(char)
        elif char == "?":
            positional += 1
            out.append(f"${positional}")
        elif char == ":" and sql[i + 1 : i + 2] == ":":
            out.append("::")
            i += 1
        elif char == ":" and (match := _NAME.match(sql, i + 1)) and not _word_before(sql, i):
            name = match.group()
            if name not in names:
                names.append(name)
            out.append(f"${names.index(name) + 1}")
            i = match.end() - 1
        else:
            out.append(char)
        i += 1
    if names and positional:
        raise ValueError("a statement mixes ? and :name placeholders")
    return "".join(out), (tuple(names) if names else positional)


def _word_before(sql: str, index: int) -> bool:
    return index > 0 and (sql[index - 1].isalnum() or sql[index - 1] == "_")


@overload
def postgres_statement(sql: str, params: Params) -> tuple[str, tuple[Any, ...]]: ...
@overload
def postgres_statement(sql: str, params: None) -> tuple[str, None]: ...
def postgres_statement(sql: str, params: Params | None) -> tuple[str, tuple[Any, ...] | None]:
    """`sql` and `params` in asyncpg's `$n` form."""
    text, shape = _numbered(sql)
    if params is None:
        return text, None
    if isinstance(shape, tuple):
        if not isinstance(params, Mapping):
            raise TypeError("named placeholders need a mapping of parameters")
        return text, tuple(_postgres_value(params[name]) for name in shape)
    if isinstance(params, Mapping):
        raise TypeError("? placeholders need a sequence of parameters")
    return text, tuple(_postgres_value(value) for value in params)


def _postgres_value(value: Any) -> Any:
    """`value` as PostgreSQL can store it: its text cannot hold NUL (SQLite's can), so a NUL
    in a string becomes U+FFFD (the replacement character) instead of failing the write."""
    if isinstance(value, str) and NUL in value:
        return value.replace(NUL, REPLACEMENT)
    return value


class Row:
    """One result row: by position (`row[0]`) or column name (`row["id"]`), like sqlite3.Row."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: Mapping[str, int], values: tuple[Any, ...]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return self._values == other._values and list(self._index) == list(other._index)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._index)


def make_rows(columns: Sequence[str], values: Sequence[Sequence[Any]]) -> list[Row]:
    """Rows sharing one column index."""
    index: dict[str, int] = {}
    for position, name in enumerate(columns):
        index.setdefault(name, position)  # a repeated name answers with its first column
    return [Row(index, tuple(row)) for row in values]
