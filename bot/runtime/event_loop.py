"""The event loop every PlayChat process runs on: uvloop where it is installed, else asyncio's.

uvloop (libuv under asyncio's interface) runs the loop, its timers and its sockets in C: a warm
Discord turn costs ≈ 7 % less CPU than on asyncio's selector loop (bench/discord_turn.py
--event-loop); start-up takes as long. It has no Windows build; there, or with
`EVENT_LOOP=asyncio`, the process runs on asyncio's own loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

from bot.errors import StartupError

_T = TypeVar("_T")

LoopChoice = Literal["auto", "uvloop", "asyncio"]
LoopFactory = Callable[[], asyncio.AbstractEventLoop]


def loop_factory(choice: LoopChoice = "auto") -> LoopFactory | None:
    """The new-loop function for `choice`; None means asyncio's own.

    "auto" takes uvloop when it can be imported; "uvloop" insists on it (a StartupError when
    it is missing); "asyncio" never uses it.
    """
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError as exc:
        if choice == "uvloop":
            raise StartupError(
                "EVENT_LOOP=uvloop, but uvloop is not installed (it has no Windows build); "
                "install it or set EVENT_LOOP=auto."
            ) from exc
        return None
    factory: LoopFactory = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, _T], choice: LoopChoice = "auto") -> _T:
    """`asyncio.run(main)` on the loop `loop_factory(choice)` picks."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(main)


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """ "uvloop" or "asyncio": which implementation `loop` is (for logs and reports)."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
