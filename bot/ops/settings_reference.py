"""The configuration reference in README.md, generated from the settings model.

`python -m bot.ops.settings_reference` rewrites the table between the README's
`<!-- settings:begin -->` and `<!-- settings:end -->` markers; `--check` only compares and
exits 1 when the README and `bot.config.Settings` disagree.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import SecretStr
from pydantic.fields import FieldInfo

from bot.config import RUNTIME_KEYS, SECRET_KEYS, Settings

BEGIN = "<!-- settings:begin -->"
END = "<!-- settings:end -->"
HEADER = ("Setting", "Default", "Range or allowed values", "What it does", "Runtime")


@dataclass(frozen=True, slots=True)
class SettingRow:
    """One row of the reference: each cell as Markdown."""

    setting: str
    default: str
    allowed: str
    description: str
    runtime: str

    def cells(self) -> tuple[str, str, str, str, str]:
        """The cells in table order."""
        return (self.setting, self.default, self.allowed, self.description, self.runtime)


def render_table() -> str:
    """The Markdown table of every setting, in the order Settings declares them."""
    rows = [
        setting_row(name, field, runtime=name in RUNTIME_KEYS, secret=name in SECRET_KEYS)
        for name, field in Settings.model_fields.items()
    ]
    lines = [_line(HEADER), _line(("---",) * len(HEADER))]
    lines.extend(_line(row.cells()) for row in rows)
    return "\n".join(lines) + "\n"


def setting_row(name: str, field: FieldInfo, *, runtime: bool, secret: bool) -> SettingRow:
    """The row of one settings field (`name` as the model spells it, lower case)."""
    return SettingRow(
        setting=f"`{name.upper()}`",
        default=render_default(field, secret=secret),
        allowed=render_allowed(field, secret=secret),
        description=_cell(field.description or ""),
        runtime="yes" if runtime else "no",
    )


def render_default(field: FieldInfo, *, secret: bool) -> str:
    """The default as an owner would write it in `.env`; secrets and empties in words."""
    value = field.get_default(call_default_factory=True)
    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if value is None or (isinstance(value, str | list | tuple | set | frozenset) and not value):
        return "*not set*" if secret or value is None else "*empty*"
    if secret:
        return "*(secret)*"
    return f"`{_cell(_plain(value))}`"


def render_allowed(field: FieldInfo, *, secret: bool) -> str:
    """What the field accepts: choices, a bounded number, a list, a pattern or plain text."""
    annotation = _without_none(field.annotation)
    if get_origin(annotation) is Literal:
        return ", ".join(f"`{_plain(choice)}`" for choice in get_args(annotation))
    if annotation is bool:
        return "`true`, `false`"
    if annotation in (int, float):
        kind = "whole number" if annotation is int else "number"
        bounds = _bounds(field.metadata)
        return f"{kind}, {bounds}" if bounds else kind
    if get_origin(annotation) is list:
        (item,) = get_args(annotation) or (str,)
        return "comma-separated whole numbers" if item is int else "comma-separated list"
    if annotation is Path:
        return "path"
    text = "text, kept secret" if secret else "text"
    for item in field.metadata:
        pattern = getattr(item, "pattern", None)
        if pattern is not None:
            return f"{text} matching `{_cell(str(pattern))}`"
        if getattr(item, "min_length", None):
            return f"{text}, not empty"
    return text


def readme_block(text: str) -> str:
    """The part of a README between the settings markers (ValueError when they are missing)."""
    start = text.find(BEGIN)
    end = text.find(END, start + len(BEGIN))
    if start < 0 or end < 0:
        raise ValueError(f"the README has no {BEGIN} … {END} block")
    return text[start + len(BEGIN) : end].strip("\n") + "\n"


def with_table(text: str, table: str) -> str:
    """The README text with its settings block replaced by `table`."""
    readme_block(text)  # ValueError without the markers
    start = text.find(BEGIN) + len(BEGIN)
    end = text.find(END, start)
    return f"{text[:start]}\n{table}{text[end:]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Rewrite the README's settings table, or with --check report whether it is current."""
    parser = argparse.ArgumentParser(prog="python -m bot.ops.settings_reference")
    parser.add_argument("--readme", type=Path, default=Path("README.md"), help="the README")
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    args = parser.parse_args(argv)
    readme: Path = args.readme
    text = readme.read_text("utf-8")
    table = render_table()
    try:
        current = readme_block(text)
    except ValueError as exc:
        sys.stderr.write(f"{readme}: {exc}\n")
        return 2
    if args.check:
        if current == table:
            return 0
        sys.stderr.write(
            f"{readme}: the settings table differs from bot/config.py; "
            "run python -m bot.ops.settings_reference\n"
        )
        return 1
    updated = with_table(text, table)
    if updated != text:
        readme.write_text(updated, "utf-8")
    return 0


def _without_none(annotation: Any) -> Any:
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return args[0]
    return annotation


def _bounds(metadata: list[Any]) -> str:
    found = {
        attr: getattr(item, attr)
        for item in metadata
        for attr in ("ge", "gt", "le", "lt")
        if getattr(item, attr, None) is not None
    }
    if "ge" in found and "le" in found:
        return f"{_plain(found['ge'])} to {_plain(found['le'])}"
    words = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
    return " and ".join(f"{words[attr]} {_plain(value)}" for attr, value in found.items())


def _plain(value: Any) -> str:
    """A value as typed in `.env`: whole floats without `.0`, lists comma-separated."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(_plain(item) for item in value)
    return str(value)


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (one line, pipes escaped)."""
    return " ".join(text.split()).replace("|", "\\|")


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


if __name__ == "__main__":
    raise SystemExit(main())
