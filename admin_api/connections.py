"""Connection limits aiohttp's server lacks: header and body deadlines, a connection cap.

aiohttp closes idle kept-alive connections (`keepalive_timeout`) but has no deadline for
receiving a request's headers or body, and no cap on connections, so silent sockets and
byte-a-second tricklers can pile up until the process (shared with the Discord bot) runs out
of file descriptors. Every connection of the admin site goes through a `GuardedConnection`
that wraps aiohttp's own protocol: it is refused at once over the cap, closed when its headers
are not complete in time (from connecting, or from the first byte of a later request on a
kept-alive connection), and closed when a request body is not complete in time.
`connection_middleware` tells the guard when a request's headers are in and when it is done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import cast

from aiohttp import StreamReader, web

log = logging.getLogger(__name__)

ProtocolFactory = Callable[[], asyncio.Protocol]

_BUSY_TEXT = b"Too many connections; try again later.\n"
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"Connection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\n"
    b"Content-Length: " + str(len(_BUSY_TEXT)).encode() + b"\r\n\r\n" + _BUSY_TEXT
)


class ConnectionGuard:
    """The admin server's open connections, their deadlines, and the cap on their number."""

    def __init__(self, *, header_timeout: float, body_timeout: float, max_connections: int) -> None:
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.max_connections = max_connections
        self._open: dict[asyncio.BaseTransport, GuardedConnection] = {}
        self._saturated = False

    @property
    def open_connections(self) -> int:
        """How many connections are open now."""
        return len(self._open)

    def protocol_factory(self, factory: ProtocolFactory) -> ProtocolFactory:
        """A protocol factory for `loop.create_server` that guards `factory`'s protocols."""
        return lambda: GuardedConnection(self, factory)

    def admit(self, transport: asyncio.BaseTransport, connection: GuardedConnection) -> bool:
        """Register a new connection; False when the cap is reached (the caller refuses it)."""
        if len(self._open) >= self.max_connections:
            if not self._saturated:
                self._saturated = True
                log.warning(
                    "admin API: %d connections open (ADMIN_MAX_CONNECTIONS); refusing new ones",
                    len(self._open),
                )
            return False
        if self._saturated:
            self._saturated = False
            log.info("admin API: accepting connections again")
        self._open[transport] = connection
        return True

    def release(self, transport: asyncio.BaseTransport) -> None:
        """Forget a closed connection."""
        self._open.pop(transport, None)

    def request_started(self, request: web.BaseRequest) -> None:
        """A request's headers are in: stop its header deadline, start its body deadline."""
        connection = self._connection_of(request)
        if connection is not None:
            connection.headers_complete(request)

    def request_finished(self, request: web.BaseRequest) -> None:
        """A request's handler is done: the next bytes on its connection start a new request."""
        connection = self._connection_of(request)
        if connection is not None:
            connection.request_done()

    def _connection_of(self, request: web.BaseRequest) -> GuardedConnection | None:
        transport = request.transport
        return None if transport is None else self._open.get(transport)


class GuardedConnection(asyncio.Protocol):
    """Wraps one aiohttp protocol: passes every event on, and closes the connection when the
    client is too slow with headers or body."""

    def __init__(self, guard: ConnectionGuard, factory: ProtocolFactory) -> None:
        self._guard = guard
        self._factory = factory
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self._header_deadline: asyncio.TimerHandle | None = None
        self._body_deadline: asyncio.TimerHandle | None = None
        self._between_requests = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Refuse the connection over the cap; otherwise start its header deadline."""
        stream = cast(asyncio.Transport, transport)
        if not self._guard.admit(transport, self):
            stream.write(BUSY_RESPONSE)
            stream.close()
            return
        self._transport = stream
        self._inner = self._factory()
        self._start_header_deadline()
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        """Pass the bytes on; the first bytes after a finished request start a header deadline."""
        if self._inner is None:
            return
        if self._between_requests:
            self._between_requests = False
            self._start_header_deadline()
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        """Pass the end of the client's stream on."""
        return None if self._inner is None else self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the deadlines, free the slot, and tell aiohttp."""
        self._cancel_deadlines()
        if self._transport is not None:
            self._guard.release(self._transport)
            self._transport = None
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        """Pass flow control on."""
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        """Pass flow control on."""
        if self._inner is not None:
            self._inner.resume_writing()

    def headers_complete(self, request: web.BaseRequest) -> None:
        """The headers of `request` are in; its body (if any) must follow within the deadline."""
        self._cancel_deadlines()
        self._between_requests = False
        if request.body_exists and not request.content.is_eof():
            loop = asyncio.get_running_loop()
            self._body_deadline = loop.call_later(
                self._guard.body_timeout, self._body_overdue, request.content
            )

    def request_done(self) -> None:
        """The handler finished; whatever arrives next begins another request."""
        self._between_requests = True

    def _start_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
        loop = asyncio.get_running_loop()
        self._header_deadline = loop.call_later(self._guard.header_timeout, self._headers_overdue)

    def _cancel_deadlines(self) -> None:
        for handle in (self._header_deadline, self._body_deadline):
            if handle is not None:
                handle.cancel()
        self._header_deadline = self._body_deadline = None

    def _headers_overdue(self) -> None:
        self._header_deadline = None
        self._close("request headers", self._guard.header_timeout)

    def _body_overdue(self, content: StreamReader) -> None:
        self._body_deadline = None
        if not content.is_eof():
            self._close("the request body", self._guard.body_timeout)

    def _close(self, what: str, seconds: float) -> None:
        transport = self._transport
        if transport is None:
            return
        log.debug(
            "admin API: closing the connection from %s: %s not received within %g s",
            _peer(transport),
            what,
            seconds,
        )
        transport.abort()


def _peer(transport: asyncio.BaseTransport) -> str:
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else "an unknown peer"


class GuardedSite(web.BaseSite):
    """A TCP site whose connections pass through a ConnectionGuard."""

    def __init__(
        self,
        runner: web.BaseRunner,
        guard: ConnectionGuard,
        host: str | None,
        port: int,
        *,
        backlog: int = 128,
    ) -> None:
        super().__init__(runner, backlog=backlog)
        self._guard = guard
        self._host = host
        self._port = port

    @property
    def name(self) -> str:
        """The site's URL."""
        host = self._host or "0.0.0.0"  # noqa: S104 - a display name, not a bind
        return f"http://{host}:{self._port}"

    async def start(self) -> None:
        """Listen on host:port."""
        await super().start()
        server = self._runner.server
        if server is None:
            raise RuntimeError("the runner is not set up")
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self._guard.protocol_factory(server), self._host, self._port, backlog=self._backlog
        )
