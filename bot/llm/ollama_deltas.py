"""Ollama chat stream lines that arrived in one read, handed on as one line.

Each line of an Ollama chat stream is a delta of a few characters. A reader that takes the
stream at a pace (`bot.llm.pacing`) gets ten or so of them per read, and every one of them
cost the ollama client a JSON parse and a pydantic model, then a trip through each generator
above it (backend, gateway, engine, front end) — about four times what joining them costs.
Only plain text deltas are joined (role "assistant", content and thinking, `done` false, no
other field); the order of everything is kept, and any other line — tool calls, the final
line, an error, anything unforeseen or malformed — passes exactly as it came.
"""

from __future__ import annotations

import json
import re
from typing import Any

_DELTA_FIELDS = frozenset({"model", "created_at", "message", "done"})
_DELTA_MESSAGE_FIELDS = frozenset({"role", "content", "thinking"})

# A text delta as Ollama writes it (compact) or as Python's json.dumps would (", " and ": "),
# its strings without a quote, backslash or control character: json.loads would parse it to
# exactly these strings, and json.dumps write them back unchanged. Found with one regex
# instead of a parse; any other line (an escape, another layout) takes json.loads.
_PLAIN = rb'"([^"\\\x00-\x1f]*)"'
_CANONICAL = re.compile(
    rb'\{"model": ?' + _PLAIN + rb', ?"created_at": ?' + _PLAIN
    + rb', ?"message": ?\{"role": ?"assistant", ?"content": ?' + _PLAIN
    + rb'(?:, ?"thinking": ?' + _PLAIN + rb')?\}, ?"done": ?false\}'
)  # fmt: skip

# A text delta in the canonical layout: its model, created_at, content and thinking (None if
# absent) as the UTF-8 bytes between their quotes.
_Plain = tuple[bytes, bytes, bytes, bytes | None]
_Part = dict[str, Any] | _Plain


def _plain_delta(line: bytes) -> _Plain | None:
    """`line`'s strings, if it is a text delta in the canonical layout in strict UTF-8."""
    if b"\\" in line:
        return None
    match = _CANONICAL.fullmatch(line)
    if match is None:
        return None
    try:
        # json.loads would also take encoded surrogates; such a line goes the parsed way.
        line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    model, created_at, content, thinking = match.groups()
    return model, created_at, content, thinking


def _text_delta(line: bytes) -> _Part | None:
    """`line` (parsed, or its plain strings) if it is a plain text delta; None otherwise."""
    if not line.startswith(b"{"):
        return None
    plain = _plain_delta(line)
    if plain is not None:
        return plain
    try:
        part = json.loads(line)
    except ValueError:
        return None
    if not isinstance(part, dict) or part.get("done") is not False:
        return None
    message = part.get("message")
    if (
        not _DELTA_FIELDS.issuperset(part)
        or not isinstance(message, dict)
        or message.get("role") != "assistant"
        or not _DELTA_MESSAGE_FIELDS.issuperset(message)
        or not isinstance(message.get("content", ""), str)
        or not isinstance(message.get("thinking", ""), str)
    ):
        return None
    return part


def _parsed(part: _Part) -> dict[str, Any]:
    """`part` as json.loads parses its line."""
    if isinstance(part, dict):
        return part
    model, created_at, content, thinking = part
    message = {"role": "assistant", "content": content.decode()}
    if thinking is not None:
        message["thinking"] = thinking.decode()
    return {
        "model": model.decode(),
        "created_at": created_at.decode(),
        "message": message,
        "done": False,
    }


def _joined_plain(run: list[_Plain]) -> str:
    """What `_joined` gives for plain parts, written without building and dumping dicts."""
    model, created_at = run[-1][0], run[-1][1]
    content = b"".join(part[2] for part in run)
    thinking = b"".join(part[3] or b"" for part in run)
    extra = b', "thinking": "' + thinking + b'"' if thinking else b""
    return (
        b'{"model": "' + model + b'", "created_at": "' + created_at
        + b'", "message": {"role": "assistant", "content": "' + content + b'"' + extra
        + b'}, "done": false}'
    ).decode()  # fmt: skip


def _joined(run: list[_Part]) -> str:
    plain = [part for part in run if not isinstance(part, dict)]
    if len(plain) == len(run):
        return _joined_plain(plain)
    parts = [_parsed(part) for part in run]
    content = "".join(p["message"].get("content", "") for p in parts)
    message = {"role": "assistant", "content": content}
    thinking = "".join(p["message"].get("thinking", "") for p in parts)
    if thinking:
        message["thinking"] = thinking
    return json.dumps({**parts[-1], "message": message}, ensure_ascii=False)


def joined_deltas(lines: list[bytes]) -> list[str]:
    """`lines` (one read's worth, in order) as text, each run of text deltas joined into one."""
    out: list[str] = []
    run: list[tuple[bytes, _Part]] = []
    for line in lines:
        part = _text_delta(line) if len(lines) > 1 else None
        if part is not None:
            run.append((line, part))
            continue
        _flush(run, out)
        out.append(line.decode("utf-8", "replace"))
    _flush(run, out)
    return out


def _flush(run: list[tuple[bytes, _Part]], out: list[str]) -> None:
    """Append the run to `out` (a run of one as it came, unchanged) and empty it."""
    if len(run) == 1:
        out.append(run[0][0].decode("utf-8", "replace"))
    elif run:
        out.append(_joined([part for _, part in run]))
    run.clear()
