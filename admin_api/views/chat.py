"""Drive the chat engine over HTTP: the turn's events as server-sent events."""

from __future__ import annotations

import json
import logging
from contextlib import aclosing
from typing import Annotated

from aiohttp import web

from admin_api.routing import EventStream, Route
from admin_api.schemas.chat import ChatIn, chat_event_schema
from admin_api.state import AdminState
from admin_api.turns import ChatInput
from bot.turn.events import to_wire

log = logging.getLogger(__name__)

SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
CHAT_EVENTS = EventStream("ChatEvent", "Server-sent events of one chat turn", chat_event_schema)


def sse_frame(payload: dict[str, object]) -> bytes:
    """One server-sent event carrying `payload` as JSON."""
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


async def chat_stream(
    request: web.Request, admin: AdminState, body: ChatIn
) -> Annotated[web.StreamResponse, CHAT_EVENTS]:
    """Run a chat turn; answer as server-sent events.

    Streams session_id, tool, notes_updated, sources, chunk, done or error. A client that goes
    away does not stop the turn: the engine finishes and stores it. The turn runs in
    `space_id` (default: the local space); an existing session continues in its own space, and
    naming another one is a 422.
    """
    events = await admin.turns.start(
        ChatInput(body.message, body.session_id, body.model, body.note_page_ids, body.space_id)
    )
    response = web.StreamResponse(headers=SSE_HEADERS)
    async with aclosing(events):
        await response.prepare(request)
        async for event in events:
            try:
                await response.write(sse_frame(to_wire(event)))
            except ConnectionResetError:
                log.info("chat stream reader went away; the turn continues")
                return response
    await response.write_eof()
    return response


def routes() -> list[Route]:
    """Chat routes."""
    return [Route("POST", "/api/chat/stream", chat_stream)]
