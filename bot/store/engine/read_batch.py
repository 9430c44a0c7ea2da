"""SQLite reads that wait together share one trip to the reader's thread.

The reader connection serves one trip at a time. Reads issued while a trip is under way (the
context layers draft concurrently, each with its own chain of reads) used to queue on a lock
and cost a trip each: a hop to aiosqlite's thread and back to the event loop, which on a
loaded machine waits its turn for a core every time. Here the next trip takes every read
queued by then and runs them in order on the thread (each read's result or error goes to its
own caller): the same statements on the same connection, in fewer trips.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.store.engine.connection import SqliteConnection
from bot.store.engine.dialect import Params, Row


@dataclass(frozen=True, slots=True)
class _Read:
    sql: str
    params: Params
    rows: asyncio.Future[list[Row]]


class ReadBatcher:
    """Runs queued reads on `link`, all those waiting per trip, one trip at a time (`lock`)."""

    def __init__(self, link: SqliteConnection, lock: asyncio.Lock) -> None:
        self._link = link
        self._lock = lock
        self._queued: list[_Read] = []

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one read (on the next trip) and return its rows."""
        read = _Read(sql, params, asyncio.get_running_loop().create_future())
        self._queued.append(read)
        if not self._lock.locked():
            # One loop turn first: reads started alongside this one (a gather) queue too.
            await asyncio.sleep(0)
        while not read.rows.done():
            async with self._lock:
                if not read.rows.done():
                    await self._trip(read)
        return read.rows.result()

    async def _trip(self, own: _Read) -> None:
        batch, self._queued = self._queued, []
        try:
            outcomes = await self._link.run_reads([(read.sql, read.params) for read in batch])
        except BaseException:
            # Cancelled (or the trip itself failed): the others' reads go back to the front
            # of the queue and the next trip runs them (a read may run twice: harmless).
            self._queued[:0] = [read for read in batch if read is not own]
            raise
        for read, outcome in zip(batch, outcomes, strict=True):
            if read.rows.done():  # its caller is gone
                continue
            if isinstance(outcome, BaseException):
                read.rows.set_exception(outcome)
            else:
                read.rows.set_result(outcome)
