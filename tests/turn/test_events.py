"""A turn's events on the wire: the shape seed 002's SSE stream sends."""

from __future__ import annotations

from bot.turn.events import ChunkEvent, DoneEvent, SessionEvent, ToolEvent, to_wire


def test_wire_format_matches_the_seed() -> None:
    assert to_wire(SessionEvent("s1")) == {"type": "session_id", "value": "s1"}
    running = to_wire(
        ToolEvent("t", "web_search", "running", label='web_search "q"', detail="{}", icon="🔎")
    )
    assert running == {
        "type": "tool",
        "value": {
            "id": "t",
            "name": "web_search",
            "status": "running",
            "icon": "🔎",
            "label": 'web_search "q"',
            "detail": "{}",
        },
    }
    done = to_wire(ToolEvent("t", "web_search", "done", result="ok"))
    assert done["value"] == {
        "id": "t",
        "name": "web_search",
        "status": "done",
        "icon": "🔧",
        "result": "ok",
    }
    assert to_wire(ChunkEvent("hi")) == {"type": "chunk", "value": "hi"}
    assert to_wire(DoneEvent("hi", 3))["type"] == "done"
