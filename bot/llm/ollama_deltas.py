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
from typing import Any

_DELTA_FIELDS = frozenset({"model", "created_at", "message", "done"})
_DELTA_MESSAGE_FIELDS = frozenset({"role", "content", "thinking"})


def _text_delta(line: bytes) -> dict[str, Any] | None:
    """`line` parsed, if it is a plain text delta; None for anything else."""
    if not line.startswith(b"{"):
        return None
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


def _joined(run: list[dict[str, Any]]) -> str:
    content = "".join(p["message"].get("content", "") for p in run)
    message = {"role": "assistant", "content": content}
    thinking = "".join(p["message"].get("thinking", "") for p in run)
    if thinking:
        message["thinking"] = thinking
    return json.dumps({**run[-1], "message": message}, ensure_ascii=False)


def joined_deltas(lines: list[bytes]) -> list[str]:
    """`lines` (one read's worth, in order) as text, each run of text deltas joined into one."""
    out: list[str] = []
    run: list[tuple[bytes, dict[str, Any]]] = []
    for line in lines:
        part = _text_delta(line) if len(lines) > 1 else None
        if part is not None:
            run.append((line, part))
            continue
        _flush(run, out)
        out.append(line.decode("utf-8", "replace"))
    _flush(run, out)
    return out


def _flush(run: list[tuple[bytes, dict[str, Any]]], out: list[str]) -> None:
    """Append the run to `out` (a run of one as it came, unchanged) and empty it."""
    if len(run) == 1:
        out.append(run[0][0].decode("utf-8", "replace"))
    elif run:
        out.append(_joined([part for _, part in run]))
    run.clear()
