"""The application log, live: server-sent events of new records (secrets masked), by level.

Not the LLM API logs (`logs`). A reader that falls behind loses records, never slows logging:
it gets a `dropped` event with how many it missed. Each entry's SSE `id` is its number, so a
reconnecting EventSource (Last-Event-ID) continues where it stopped, from what is kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Annotated

from aiohttp import web

from admin_api.routing import EventStream, Route
from admin_api.schemas.live_log import (
    DroppedOut,
    LiveLogQuery,
    LogEntryOut,
    RecentLogOut,
    live_log_event_schema,
)
from admin_api.views.chat import SSE_HEADERS
from bot.services import Services
from bot.utils.live_log import EntryFilter, LogEntry, level_number

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 15.0
# How often a waiting stream checks that its reader is still connected.
POLL_SECONDS = 1.0
LIVE_LOG_EVENTS = EventStream(
    "LiveLogEvent", "Server-sent events of the application log", live_log_event_schema
)


def _entry(entry: LogEntry) -> LogEntryOut:
    return LogEntryOut(
        id=entry.id,
        time=entry.time,
        level=entry.level,
        logger=entry.logger,
        message=entry.message,
    )


def _frame(event: LogEntryOut | DroppedOut) -> bytes:
    data = json.dumps(event.model_dump(mode="json"), ensure_ascii=False)
    event_id = f"id: {event.id}\n" if isinstance(event, LogEntryOut) else ""
    return f"{event_id}data: {data}\n\n".encode()


def _last_event_id(request: web.Request) -> int:
    with contextlib.suppress(ValueError):
        return max(0, int(request.headers.get("Last-Event-ID", "0")))
    return 0


async def recent_log(services: Services, query: LiveLogQuery) -> RecentLogOut:
    """The newest kept application log records at or above `level` (and matching `text` and
    `logger`), oldest first."""
    accepts = EntryFilter.parse(query.text, query.logger)
    entries = services.live_log.recent(
        level_number(query.level), limit=query.backlog, accepts=accepts
    )
    return RecentLogOut(entries=[_entry(entry) for entry in entries])


async def live_log(
    request: web.Request, services: Services, query: LiveLogQuery
) -> Annotated[web.StreamResponse, LIVE_LOG_EVENTS]:
    """Stream the application log as server-sent events (entry, dropped).

    First up to `backlog` kept records (after Last-Event-ID when the client sends one), then
    every new record at or above `level` until the client goes away; `text` and `logger`
    narrow both. A comment line every 15 s keeps proxies from closing an idle stream.
    """
    feed = services.live_log
    level = level_number(query.level)
    accepts = EntryFilter.parse(query.text, query.logger)
    subscription = feed.subscribe(level, accepts)
    response = web.StreamResponse(headers=SSE_HEADERS)
    try:
        await response.prepare(request)
        after = _last_event_id(request)
        for entry in feed.recent(level, after=after, limit=query.backlog, accepts=accepts):
            await response.write(_frame(_entry(entry)))
            after = entry.id
        reported = 0
        quiet_since = time.monotonic()
        while not subscription.closed:
            try:
                async with asyncio.timeout(POLL_SECONDS):
                    batch = await subscription.next_batch()
            except TimeoutError:
                if request.transport is None or request.transport.is_closing():
                    break
                if time.monotonic() - quiet_since >= HEARTBEAT_SECONDS:
                    await response.write(b": keep-alive\n\n")
                    quiet_since = time.monotonic()
                continue
            quiet_since = time.monotonic()
            if subscription.dropped > reported:
                await response.write(_frame(DroppedOut(count=subscription.dropped - reported)))
                reported = subscription.dropped
            for entry in batch:
                if entry.id > after:
                    await response.write(_frame(_entry(entry)))
        if subscription.closed:
            await response.write_eof()
    except ConnectionResetError:
        log.debug("live log reader went away")
    finally:
        feed.unsubscribe(subscription)
    return response


def routes() -> list[Route]:
    """Live application log routes (before the API logs' /api/logs/{id})."""
    return [
        Route("GET", "/api/logs/live", live_log),
        Route("GET", "/api/logs/live/recent", recent_log),
    ]
