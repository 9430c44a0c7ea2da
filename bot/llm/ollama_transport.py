"""The HTTP transport under the official ollama client: httpx's interface over aiohttp.

The ollama client speaks httpx; its default stack (httpcore, anyio, h11) costs more CPU per
streamed chunk than aiohttp's, and it has no way to pace reads. This transport sends the
client's requests with one aiohttp session and hands the body back chunk by chunk, at the
turn's `ReadPace`. `OllamaBackend.__init__` is its one seam. Why it stays: the tricks ledger
(bench/README.md; bench/paired.py over bench/discord_turn.py --turns 15 --threads 0) measured
bot CPU per warm Discord reply 14.8 ms with it vs 43.0 ms with the client's own transport, and
32 vs 45 ms with reads unpaced; cold first visible text 13 vs 43 ms.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import aiohttp
import httpx

from bot.llm.pacing import ReadPace, current_pace

log = logging.getLogger(__name__)

_UTF8 = frozenset({"utf-8", "utf8"})


def split_lines(pending: list[bytes], chunk: bytes) -> list[bytes]:
    """The lines `chunk` completes, '\\n'-terminated, without the newline (nor a '\\r' before
    it); an unfinished tail is kept in `pending` for the next chunk."""
    if b"\n" not in chunk:
        pending.append(chunk)
        return []
    lines = chunk.split(b"\n")
    if pending:
        lines[0] = b"".join((*pending, lines[0]))
        pending.clear()
    tail = lines.pop()
    if tail:
        pending.append(tail)
    return [line[:-1] if line.endswith(b"\r") else line for line in lines]


class LineResponse(httpx.Response):
    """An httpx response whose `aiter_lines` splits the transport's chunks itself.

    httpx stacks four async generators and three decoders per chunk (raw, bytes, text,
    lines); an NDJSON stream in plain UTF-8 needs none of them. Lines end at '\\n' only
    (with an optional '\\r'), which is NDJSON's rule: unlike `str.splitlines` it never cuts
    a line at a U+0085 or U+2028 inside a JSON string. Anything else (a compressed body,
    another charset) takes httpx's own path.
    """

    async def aiter_lines(self) -> AsyncIterator[str]:
        """Each line of the body, decoded as UTF-8 (bad bytes replaced, as httpx does)."""
        encoded = self.headers.get("content-encoding", "identity").strip().lower()
        if encoded != "identity" or (self.encoding or "utf-8").lower() not in _UTF8:
            async for text in super().aiter_lines():
                yield text
            return
        if self.is_stream_consumed:
            raise httpx.StreamConsumed()
        if self.is_closed:
            raise httpx.StreamClosed()
        if not isinstance(self.stream, httpx.AsyncByteStream):
            raise RuntimeError("Attempted to call an async iterator on a sync stream.")
        self.is_stream_consumed = True
        pending: list[bytes] = []
        try:
            async for chunk in self.stream:
                for raw in split_lines(pending, chunk):
                    yield raw.decode("utf-8", "replace")
        except httpx.RequestError as exc:
            exc.request = self.request  # as httpx's own iterators do
            raise
        if pending:
            yield b"".join(pending).decode("utf-8", "replace")


@contextmanager
def httpx_errors(request: httpx.Request) -> Iterator[None]:
    """aiohttp's failures as the httpx errors the ollama client and our classifier expect."""
    try:
        yield
    except aiohttp.ConnectionTimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc), request=request) from exc
    except aiohttp.ServerTimeoutError as exc:
        raise httpx.ReadTimeout(str(exc), request=request) from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc
    except aiohttp.ClientPayloadError as exc:
        raise httpx.ReadError(str(exc), request=request) from exc
    except aiohttp.ClientConnectionError as exc:
        # A dropped keep-alive or a server that closed mid-answer.
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__, request=request) from exc
    except aiohttp.InvalidURL as exc:
        raise httpx.UnsupportedProtocol(str(exc), request=request) from exc
    except TimeoutError as exc:
        raise httpx.TimeoutException(str(exc) or "timed out", request=request) from exc


class ResponseBody(httpx.AsyncByteStream):
    """An aiohttp response's body as httpx's byte stream, read at the turn's pace.

    With a pace set, the reader takes whatever has arrived; when nothing has, it stops the
    socket's reading for the pace's seconds (aiohttp's own flow control, which also holds the
    read timeout) so the chunks sent meanwhile come in one read, not one wake-up each.
    """

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request
        self._pace = current_pace()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        with httpx_errors(self._request):
            while True:
                chunk = content.read_nowait()
                if not chunk:
                    if content.at_eof():
                        return
                    if self._pace is not None and self._pace.seconds > 0:
                        await self._gather(self._pace)
                    chunk = await content.readany()
                    if not chunk:
                        return
                yield chunk

    async def _gather(self, pace: ReadPace) -> None:
        connection = self._response.connection
        protocol = connection.protocol if connection is not None else None
        if protocol is None or protocol.transport is None or self._response.content.is_eof():
            return
        protocol.pause_reading()
        try:
            await asyncio.sleep(pace.seconds)  # a pace, not synchronisation: nothing waits on it
        finally:
            protocol.resume_reading()

    async def aclose(self) -> None:
        """Give the connection back (closed, if the body was not read to its end)."""
        self._response.release()
        await self._response.wait_for_close()


class OllamaTransport(httpx.AsyncBaseTransport):
    """httpx's async transport over one aiohttp session; bodies iterate as `LineResponse`s.

    A refused connection reads as `httpx.ConnectError`, a dropped one as
    `httpx.RemoteProtocolError`, a stalled read as `httpx.ReadTimeout` — what httpx's own
    transport raises, which the backend's error classification relies on.
    """

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None
        self._tls: ssl.SSLContext | None = None

    def load_tls(self) -> ssl.SSLContext:
        """The TLS settings httpx's own transport would use (certifi's CAs unless SSL_CERT_FILE
        or SSL_CERT_DIR say otherwise). Blocking (reads the CA bundle): warm-up calls it."""
        if self._tls is None:
            self._tls = httpx.create_ssl_context()
        return self._tls

    def _new_session(self, scheme: str) -> aiohttp.ClientSession:
        # httpx's limits: 100 connections, idle keep-alive connections closed after 5 s.
        connector = aiohttp.TCPConnector(
            limit=100, keepalive_timeout=5.0, ssl=self.load_tls() if scheme == "https" else True
        )
        return aiohttp.ClientSession(connector=connector, auto_decompress=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` over aiohttp and return its response with the body unread."""
        if self._session is None:
            self._session = self._new_session(request.url.scheme)
        timeout = request.extensions.get("timeout", {})
        with httpx_errors(request):
            response = await self._session.request(
                request.method,
                str(request.url),
                headers=request.headers,
                data=await request.aread() or None,
                allow_redirects=False,
                compress=False,
                timeout=aiohttp.ClientTimeout(
                    sock_connect=timeout.get("connect"),
                    sock_read=timeout.get("read"),
                    connect=timeout.get("pool"),
                ),
            )
        return LineResponse(
            status_code=response.status,
            headers=response.raw_headers,
            stream=ResponseBody(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    async def aclose(self) -> None:
        """Close the session and its connections."""
        if self._session is not None:
            await self._session.close()
            self._session = None
