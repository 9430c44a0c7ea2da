"""Readiness: each part's state, checked at start and then periodically, logged on change.

A probe answers one `Check`; `Readiness` keeps the newest per component, logs ONE warning when
a component goes down (or degraded) and one info line when it recovers, and tells listeners
(the Discord presence) about every change of state.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from bot.utils.tasks import BackgroundTasks

log = logging.getLogger(__name__)

State = Literal["ok", "down", "degraded", "disabled", "unknown"]
Overall = Literal["ok", "degraded", "down"]
Fact = str | int | float | bool | None

COMPONENTS = (
    "discord",
    "model",
    "connections",
    "embeddings",
    "database",
    "settings",
    "mcp",
    "scheduler",
)
# Without these the bot cannot answer at all; any other part down only degrades it.
ESSENTIAL = frozenset({"model", "database"})
PROBE_TIMEOUT = 3.0
NOT_VISIBLE = (
    "Not visible from this process (the admin API runs alone; `python -m bot` runs the bot)."
)
TROUBLED: frozenset[State] = frozenset({"down", "degraded"})


@dataclass(frozen=True)
class Part:
    """One sub-part of a component (an MCP server): its state and last error."""

    name: str
    state: State
    detail: str
    last_error: str | None = None


@dataclass(frozen=True)
class Check:
    """What one probe found: a state, one sentence for the owner, the error if any."""

    state: State
    detail: str
    error: str | None = None
    facts: dict[str, Fact] = field(default_factory=dict)
    parts: tuple[Part, ...] = ()


@dataclass(frozen=True)
class ComponentStatus:
    """The newest known state of one component."""

    name: str
    state: State
    detail: str
    last_error: str | None = None
    checked_at: datetime | None = None
    facts: dict[str, Fact] = field(default_factory=dict)
    parts: tuple[Part, ...] = ()


Probe = Callable[[], Awaitable[Check]]
Listener = Callable[[ComponentStatus, ComponentStatus], Awaitable[None] | None]
Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


class Readiness:
    """The readiness of every component; probes are registered by whoever can see the part."""

    def __init__(
        self,
        *,
        clock: Clock = _now,
        timeout: float = PROBE_TIMEOUT,
        components: Sequence[str] = COMPONENTS,
    ) -> None:
        self._clock = clock
        self.timeout = timeout
        self._probes: dict[str, Probe] = {}
        self._status = {name: ComponentStatus(name, "unknown", NOT_VISIBLE) for name in components}
        self._listeners: list[Listener] = []
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    # -- registration

    def register(self, name: str, probe: Probe) -> None:
        """Check `name` with `probe` from now on."""
        self._probes[name] = probe
        self._status.setdefault(name, ComponentStatus(name, "unknown", NOT_VISIBLE))

    def unregister(self, name: str, probe: Probe | None = None) -> None:
        """Stop checking `name` (only if its probe is `probe`, when given); it reads "unknown"."""
        if probe is not None and self._probes.get(name) != probe:
            return
        self._probes.pop(name, None)
        if name in self._status:
            self._status[name] = ComponentStatus(name, "unknown", NOT_VISIBLE)

    def add_listener(self, listener: Listener) -> None:
        """Call `listener(new, old)` whenever a component's state changes."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling `listener`."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    # -- reading

    def status(self, name: str) -> ComponentStatus:
        """The newest state of `name`."""
        return self._status[name]

    def snapshot(self) -> list[ComponentStatus]:
        """Every component, in the order they were declared."""
        return list(self._status.values())

    def overall(self) -> Overall:
        """down when an essential part is down; degraded when any part is troubled; else ok."""
        states = {s.name: s.state for s in self._status.values()}
        if any(states.get(name) == "down" for name in ESSENTIAL):
            return "down"
        if any(state in TROUBLED for state in states.values()):
            return "degraded"
        return "ok"

    # -- checking

    async def check(self, names: Sequence[str] | None = None) -> list[ComponentStatus]:
        """Run the probes (all, or `names`) concurrently, each within the timeout; record them."""
        async with self._lock:
            wanted = [n for n in (names or list(self._probes)) if n in self._probes]
            checks = await asyncio.gather(*(self._run(name) for name in wanted))
            for name, found in zip(wanted, checks, strict=True):
                await self.record(name, found)
        return self.snapshot()

    async def _run(self, name: str) -> Check:
        try:
            async with asyncio.timeout(self.timeout):
                return await self._probes[name]()
        except TimeoutError:
            return Check(
                "unknown",
                f"The {name} check did not finish within {self.timeout:g} s.",
                error="timed out",
            )
        except Exception as exc:  # a probe's bug must not stop the others
            log.debug("readiness probe %s failed", name, exc_info=True)
            return Check("unknown", f"The {name} check failed.", error=f"{type(exc).__name__}")

    async def record(self, name: str, found: Check) -> ComponentStatus:
        """Store what a probe found; log and tell listeners when the state changed."""
        old = self._status.get(name) or ComponentStatus(name, "unknown", NOT_VISIBLE)
        new = ComponentStatus(
            name,
            found.state,
            found.detail,
            last_error=found.error if found.error is not None else old.last_error,
            checked_at=self._clock(),
            facts=dict(found.facts),
            parts=found.parts,
        )
        self._status[name] = new
        if new.state != old.state:
            self._log_transition(old, new)
            for listener in list(self._listeners):
                await self._tell(listener, new, old)
        elif new.state in TROUBLED and new.detail != old.detail:
            # Still troubled, for another reason: the owner needs the new sentence once.
            log.warning("%s", new.detail)
        return new

    @staticmethod
    def _log_transition(old: ComponentStatus, new: ComponentStatus) -> None:
        if new.state in TROUBLED:
            log.warning("%s", new.detail)
        elif old.state in TROUBLED and new.state == "ok":
            log.info("%s is back: %s", new.name, new.detail)

    @staticmethod
    async def _tell(listener: Listener, new: ComponentStatus, old: ComponentStatus) -> None:
        try:
            result = listener(new, old)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("readiness listener failed for %s", new.name)

    # -- the periodic check

    def start(self, tasks: BackgroundTasks, interval: Callable[[], float]) -> None:
        """Check again every `interval()` seconds in the background until `stop()`."""
        self._stop = asyncio.Event()
        tasks.spawn(self._every(interval), name="readiness")

    def stop(self) -> None:
        """End the periodic check."""
        self._stop.set()

    async def _every(self, interval: Callable[[], float]) -> None:
        stop = self._stop
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), interval())
            except TimeoutError:
                await self.check()
