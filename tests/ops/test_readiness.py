"""Readiness bookkeeping: one warning when a part goes down, one info line when it is back,
nothing more while it stays down; listeners hear each change; the overall status."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from bot.ops.readiness import NOT_VISIBLE, Check, ComponentStatus, Readiness


class Clock:
    """A settable wall clock."""

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


class Switch:
    """A probe whose answer the test sets."""

    def __init__(self, check: Check) -> None:
        self.check = check
        self.calls = 0

    async def __call__(self) -> Check:
        self.calls += 1
        return self.check


DOWN = Check("down", "The model server at http://x is not reachable; set LLM_API_BASE.", "refused")
OK = Check("ok", "Model m is on the Ollama server at http://x.")


def _records(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "bot.ops.readiness" and r.levelno == level
    ]


async def test_down_warns_once_recovery_informs_once_and_checks_keep_their_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, "bot.ops.readiness")
    clock = Clock()
    readiness = Readiness(clock=clock)
    probe = Switch(DOWN)
    readiness.register("model", probe)
    for _ in range(5):  # five periodic checks while it stays down
        clock.now += timedelta(seconds=60)
        await readiness.check()
    assert _records(caplog, logging.WARNING) == [DOWN.detail]
    model = readiness.status("model")
    assert (model.state, model.last_error, model.checked_at) == ("down", "refused", clock.now)
    probe.check = OK
    for _ in range(3):
        clock.now += timedelta(seconds=60)
        await readiness.check()
    assert _records(caplog, logging.WARNING) == [DOWN.detail]
    assert _records(caplog, logging.INFO) == [f"model is back: {OK.detail}"]
    model = readiness.status("model")
    assert model.state == "ok"
    assert model.last_error == "refused", "the last error is kept after recovery"
    assert probe.calls == 8


async def test_listeners_hear_changes_only() -> None:
    readiness = Readiness(clock=Clock())
    probe = Switch(OK)
    readiness.register("model", probe)
    heard: list[tuple[str, str]] = []

    async def listener(new: ComponentStatus, old: ComponentStatus) -> None:
        heard.append((old.state, new.state))

    readiness.add_listener(listener)
    await readiness.check()
    await readiness.check()
    probe.check = DOWN
    await readiness.check()
    await readiness.check()
    assert heard == [("unknown", "ok"), ("ok", "down")]


async def test_unprobed_components_are_unknown_and_overall_follows_the_essential_ones() -> None:
    readiness = Readiness(clock=Clock())
    assert {s.name for s in readiness.snapshot()} == {
        "discord",
        "model",
        "connections",
        "embeddings",
        "database",
        "settings",
        "mcp",
        "scheduler",
    }
    assert all(s.state == "unknown" and s.detail == NOT_VISIBLE for s in readiness.snapshot())
    assert readiness.overall() == "ok"
    readiness.register("embeddings", Switch(Check("down", "embeddings down")))
    await readiness.check()
    assert readiness.overall() == "degraded"
    readiness.register("model", Switch(DOWN))
    await readiness.check()
    assert readiness.overall() == "down"


async def test_a_probe_that_hangs_or_breaks_costs_the_timeout_not_the_others() -> None:
    readiness = Readiness(clock=Clock(), timeout=0.05)
    never = Switch(OK)

    async def hangs() -> Check:
        import asyncio

        await asyncio.Event().wait()
        raise AssertionError

    async def breaks() -> Check:
        raise RuntimeError("bug")

    readiness.register("discord", hangs)
    readiness.register("mcp", breaks)
    readiness.register("model", never)
    await readiness.check()
    assert readiness.status("discord").state == "unknown"
    assert readiness.status("discord").last_error == "timed out"
    assert readiness.status("mcp").last_error == "RuntimeError"
    assert readiness.status("model").state == "ok"
