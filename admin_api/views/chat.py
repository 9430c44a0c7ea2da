"""Drive the chat engine over HTTP: the turn's events as server-sent events."""

from __future__ import annotations

import json
import logging
from contextlib import aclosing

from aiohttp import web

from admin_api.deps import AdminDeps
from admin_api.routing import AnyRoute, Empty, In, Route
from admin_api.schemas import ChatEventOut, ChatIn
from admin_api.turns import ChatInput
from bot.chat.events import to_wire

log = logging.getLogger(__name__)

TAG = "chat"
SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}


def sse_frame(payload: dict[str, object]) -> bytes:
    """One server-sent event carrying `payload` as JSON."""
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


async def chat_stream(call: In[ChatIn, Empty, Empty]) -> web.StreamResponse:
    """Run a turn; stream session_id, tool, notes_updated, sources, chunk, done or error.

    A client that goes away does not stop the turn: the engine finishes and stores it.
    """
    body = call.body
    events = await call.ctx.turns.start(
        ChatInput(body.message, body.session_id, body.model, body.note_page_ids)
    )
    response = web.StreamResponse(headers=SSE_HEADERS)
    async with aclosing(events):
        await response.prepare(call.request)
        async for event in events:
            try:
                await response.write(sse_frame(to_wire(event)))
            except ConnectionResetError:
                log.info("chat stream reader went away; the turn continues")
                return response
    await response.write_eof()
    return response


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Chat routes."""
    return [
        Route(
            method="POST",
            path="/api/chat/stream",
            handler=chat_stream,
            summary="Run a chat turn; answer as server-sent events",
            tag=TAG,
            body=ChatIn,
            query=Empty,
            params=Empty,
            response=ChatEventOut,
            stream=True,
        )
    ]
