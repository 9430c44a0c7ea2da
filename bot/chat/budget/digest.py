"""A bounded digest of a tool result: its key lines, in order, within a character limit (pure).

What an earlier result leaves in the window once it no longer fits whole: its first line, its
headings and the first line of each paragraph before other lines, spread over the whole text
rather than only its start, each line whole. Left-out stretches show as a line of "…".
"""

from __future__ import annotations

import re

GAP = "…"
# A line longer than this is cut to it in the digest: one long line must not take the room of
# many short ones.
MAX_LINE_CHARS = 400


def digest(text: str, limit: int) -> str:
    """`text` whole when it fits `limit` characters, else its key lines within `limit`."""
    if len(text) <= limit:
        return text
    lines = _units(text)
    chosen: set[int] = set()
    spent = len(GAP) + 1  # the gap that may end it
    for index in sorted(range(len(lines)), key=lambda i: _rank(lines, i)):
        line = _clip(lines[index])
        if not line.strip():
            continue
        # Each kept line costs itself and its newline; a gap before it costs "…\n".
        cost = len(line) + 1 + len(GAP) + 1
        if spent + cost > limit:
            continue
        chosen.add(index)
        spent += cost
    if not chosen:
        return text[: max(0, limit - len(GAP))] + GAP
    return _join(lines, chosen)[:limit]


def _rank(lines: list[str], index: int) -> tuple[int, int]:
    """Key lines first (the first, headings, paragraph starts), then spread over the text."""
    line = lines[index].lstrip()
    # A result's first line is often its header: the one after it is where its text begins.
    if index < 2 or line.startswith("#"):
        kind = 0
    elif lines[index - 1].strip() == "" or line.startswith(("- ", "* ", "|")):
        kind = 1
    else:
        kind = 2
    # The larger the power of two dividing the position, the earlier: halves, quarters, …
    spread = -(index & -index) if index else 0
    return kind, spread


_SENTENCE_END = re.compile(r"[.!?。！？]+\s*")


def _units(text: str) -> list[str]:
    """The text's lines, a long line split after its sentences into pieces of at most about
    MAX_LINE_CHARS (each piece is the line's own text)."""
    units: list[str] = []
    for line in text.split("\n"):
        start = 0
        while len(line) - start > MAX_LINE_CHARS:
            window = line[start : start + MAX_LINE_CHARS]
            ends = [match.end() for match in _SENTENCE_END.finditer(window)]
            cut = start + (ends[-1] if ends and ends[-1] < len(window) else len(window))
            units.append(line[start:cut].rstrip())
            start = cut
        units.append(line[start:])
    return units


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + GAP


def _join(lines: list[str], chosen: set[int]) -> str:
    """The chosen lines in order, a gap line wherever lines were left out."""
    parts: list[str] = []
    last = -1
    for index in sorted(chosen):
        if index != last + 1:
            parts.append(GAP)
        parts.append(_clip(lines[index]))
        last = index
    if last != len(lines) - 1:
        parts.append(GAP)
    return "\n".join(parts) + "\n"
