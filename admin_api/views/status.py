"""The status screen: one snapshot of every part, and the same snapshot live (server-sent events).

The stream sends a snapshot on connect, again as soon as a component's readiness changes state
(a readiness listener), whenever anything else in the readiness report changes (detail, last
error, check time; looked at every second), and at least every `REFRESH_SECONDS` for uptime and
the database size. It ends when the client goes away or the admin API shuts down.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from datetime import UTC, datetime
from typing import Annotated

from aiohttp import web

from admin_api.routing import EventStream, Route
from admin_api.schemas.readiness import ComponentOut
from admin_api.schemas.status import BackupOut, ShardsOut, StatusOut, status_event_schema
from admin_api.views.chat import SSE_HEADERS
from bot.ops.process_info import process_started, version
from bot.ops.readiness import ComponentStatus
from bot.services import Services
from bot.store.engine.backup import last_backup

log = logging.getLogger(__name__)

REFRESH_SECONDS = 10.0
# How often a waiting stream looks at readiness and checks that its reader is still there.
POLL_SECONDS = 1.0
STATUS_EVENTS = EventStream("StatusEvent", "Server-sent status snapshots", status_event_schema)
# Set when the admin API shuts down: every open status stream ends at once.
STREAMS_END = web.AppKey("status_streams_end", asyncio.Event)


async def _snapshot(services: Services) -> StatusOut:
    readiness = services.readiness
    path = services.db.path
    # PostgreSQL has no backup file of ours (pg_dump is the operator's).
    backup = None if path is None else await asyncio.to_thread(last_backup, path)
    started = process_started()
    now = datetime.now(UTC)
    shards = services.settings().shards
    return StatusOut(
        status=readiness.overall(),
        components=[ComponentOut.of(status) for status in readiness.snapshot()],
        db_bytes=await services.repos.stats.db_bytes(),
        last_backup=None
        if backup is None
        else BackupOut(at=backup.at, how=backup.how, target=backup.target),
        version=version(),
        started_at=started,
        uptime_seconds=max(0, int((now - started).total_seconds())),
        shards=None
        if shards.count is None
        else ShardsOut(count=shards.count, ids=sorted(shards.ids)),
        sent_at=now,
    )


def _frame(snapshot: StatusOut) -> bytes:
    data = json.dumps(snapshot.model_dump(mode="json"), ensure_ascii=False)
    return f"data: {data}\n\n".encode()


async def get_status(services: Services) -> StatusOut:
    """Every part's readiness with the database size, last backup, version and uptime."""
    return await _snapshot(services)


async def status_stream(
    request: web.Request, services: Services
) -> Annotated[web.StreamResponse, STATUS_EVENTS]:
    """Stream status snapshots as server-sent events (each the shape of GET /api/status).

    One on connect, one whenever the readiness report changes, and one at least every 10 s
    (uptime, database size), until the client goes away.
    """
    readiness = services.readiness
    changed = asyncio.Event()
    ended = request.app.get(STREAMS_END) or asyncio.Event()

    def on_change(_new: ComponentStatus, _old: ComponentStatus) -> None:
        changed.set()

    readiness.add_listener(on_change)
    response = web.StreamResponse(headers=SSE_HEADERS)
    try:
        await response.prepare(request)
        sent = readiness.snapshot()
        await response.write(_frame(await _snapshot(services)))
        waited = 0.0
        while not ended.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL_SECONDS):
                    await changed.wait()
            waited += POLL_SECONDS
            if request.transport is None or request.transport.is_closing():
                break
            if changed.is_set() or readiness.snapshot() != sent or waited >= REFRESH_SECONDS:
                changed.clear()
                waited = 0.0
                sent = readiness.snapshot()
                await response.write(_frame(await _snapshot(services)))
        if ended.is_set():
            await response.write_eof()
    except ConnectionResetError:
        log.debug("status reader went away")
    finally:
        readiness.remove_listener(on_change)
    return response


def end_streams(app: web.Application) -> None:
    """End every open status stream (the admin API is shutting down)."""
    if STREAMS_END in app:
        app[STREAMS_END].set()


def routes() -> list[Route]:
    """Status routes."""
    return [
        Route("GET", "/api/status", get_status),
        Route("GET", "/api/status/stream", status_stream),
    ]
