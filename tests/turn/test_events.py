"""A turn's events on the wire: the shape seed 002's SSE stream sends."""

from __future__ import annotations

from bot.turn.events import (
    ChunkEvent,
    DoneEvent,
    RememberedEvent,
    SessionEvent,
    ToolEvent,
    to_wire,
)


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


def test_a_remembered_fact_carries_its_id_or_why_it_was_not_saved() -> None:
    assert to_wire(RememberedEvent(12, "my cat is Mochi", True)) == {
        "type": "remembered",
        "value": {"fact_id": 12, "fact": "my cat is Mochi", "saved": True, "reason": None},
    }
    assert to_wire(RememberedEvent(None, "my dog is Pochi", False, "memory_off"))["value"] == {
        "fact_id": None,
        "fact": "my dog is Pochi",
        "saved": False,
        "reason": "memory_off",
    }
