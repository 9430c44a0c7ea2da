"""How soon a turn's reader needs each piece of a model's stream.

A front end that shows the answer in edits a second apart (Discord) gains nothing from waking
for every token once the first is out; a `ReadPace` lets the stream's reader wait that long
between reads, so the chunks in between arrive in one read instead of one wake-up each. The
transport under the model client reads the pace of the turn it runs in (a context variable:
the client library sits between them and passes no such option). This module is that one
seam: the engine sets the pace (`reading_at`), the transport reads it (`current_pace`).

Why it stays: the tricks ledger (bench/README.md; bench/paired.py over bench/discord_turn.py
--turns 15 --threads 0) measured bot CPU per warm Discord reply 14.7 ms paced vs 34.4 ms
unpaced (8 of 8 pairs).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class ReadPace:
    """Seconds a stream's reader may wait between reads; 0 reads every chunk as it comes."""

    seconds: float = 0.0


_PACE: ContextVar[ReadPace | None] = ContextVar("read_pace", default=None)


@contextmanager
def reading_at(pace: ReadPace) -> Iterator[ReadPace]:
    """Streams opened inside this block (in this task) read at `pace`, as it changes."""
    token = _PACE.set(pace)
    try:
        yield pace
    finally:
        _PACE.reset(token)


def current_pace() -> ReadPace | None:
    """The pace of the stream being opened here, if its reader set one."""
    return _PACE.get()
