"""Running a call in a worker thread only when it is heavy enough to hold the event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


async def off_loop_if(heavy: bool, function: Callable[..., _T], /, *args: object) -> _T:
    """`function(*args)`, in a worker thread when `heavy` (numpy and big loops would hold
    the event loop), else right here (a thread hop costs more than a small call)."""
    if heavy:
        return await asyncio.to_thread(function, *args)
    return function(*args)
