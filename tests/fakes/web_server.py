"""A loopback web server for fetch tests: pages, PDFs, redirects and hostile responses."""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import zlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import TracebackType
from typing import NamedTuple, Self

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_MB = 1024 * 1024
_ZERO_MB = bytes(_MB)


class RecordedRequest(NamedTuple):
    """One request the server received."""

    method: str
    path: str
    headers: CIMultiDictProxy[str]


def _charset_of(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return value.strip().strip('"')
    return "utf-8"


def _gzip_zero_segments() -> tuple[bytes, bytes]:
    """Gzip header plus 1 MB of zeros, and the byte-identical segment for each further MB.

    A full flush after each MB resets the compressor, so every later MB compresses to the
    same bytes and a bomb of any size streams without compressing anything at request time.
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(_ZERO_MB) + compressor.flush(zlib.Z_FULL_FLUSH)
    repeat = compressor.compress(_ZERO_MB) + compressor.flush(zlib.Z_FULL_FLUSH)
    return first, repeat


def _encode(body: bytes, encoding: str | None) -> bytes:
    if encoding is None:
        return body
    if encoding == "gzip":
        return gzip.compress(body)
    if encoding == "deflate":
        return zlib.compress(body)
    raise ValueError(f"unsupported test encoding {encoding!r}")


class FakeWebServer:
    """aiohttp.web on a loopback address; routes can be added before or after start.

    `requests` lists every request received and `connections` counts accepted TCP
    connections, so SSRF tests can assert that nothing at all reached this server.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, shutdown_timeout: float = 0.5):
        self.host = host
        self.port = port
        self.requests: list[RecordedRequest] = []
        self.connections = 0
        self._shutdown_timeout = shutdown_timeout
        self._routes: dict[str, Handler] = {}
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """Base URL without a trailing slash, e.g. http://127.0.0.1:41234."""
        return f"http://{self.host}:{self.port}"

    def url_for(self, path: str) -> str:
        """Absolute URL of a path on this server."""
        return self.url + path

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Bind and start serving; `port` is the real port afterwards."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        runner = web.AppRunner(app, shutdown_timeout=self._shutdown_timeout, access_log=None)
        await runner.setup()
        server = runner.server
        assert server is not None

        def protocol_factory() -> asyncio.Protocol:
            self.connections += 1
            return server()

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(protocol_factory, sock=sock)
        self._runner = runner

    async def close(self) -> None:
        """Stop listening, end open connections and handlers."""
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(RecordedRequest(request.method, request.path, request.headers))
        handler = self._routes.get(request.path)
        if handler is None:
            return web.Response(status=404, text="not found")
        return await handler(request)

    # Routes ---------------------------------------------------------------------------------

    def add_handler(self, path: str, handler: Handler) -> None:
        """Serve `path` with any aiohttp handler."""
        self._routes[path] = handler

    def add_page(
        self,
        path: str,
        body: bytes | str,
        content_type: str = "text/html; charset=utf-8",
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        *,
        encoding: str | None = None,
    ) -> None:
        """A fixed response; str bodies are encoded with the content type's charset.

        `encoding` ("gzip" or "deflate") compresses the body and sets Content-Encoding.
        """
        raw = body.encode(_charset_of(content_type)) if isinstance(body, str) else body
        payload = _encode(raw, encoding)
        extra = CIMultiDict(headers or {})
        extra["Content-Type"] = content_type
        if encoding is not None:
            extra["Content-Encoding"] = encoding

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(body=payload, status=status, headers=extra)

        self.add_handler(path, handler)

    def add_redirect(self, path: str, location: str, status: int = 302) -> None:
        """Redirect `path` to `location` (absolute or relative)."""

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(status=status, headers={"Location": location})

        self.add_handler(path, handler)

    def add_redirect_chain(self, prefix: str, n: int, final_path: str) -> str:
        """`n` redirects: prefix/0 → prefix/1 → … → prefix/{n-1} → final_path; returns prefix/0.

        `final_path` may be a path on this server or an absolute URL elsewhere.
        """
        for index in range(n):
            target = f"{prefix}/{index + 1}" if index + 1 < n else final_path
            self.add_redirect(f"{prefix}/{index}", target)
        return f"{prefix}/0"

    def add_slow_drip(
        self,
        path: str,
        chunk: bytes = b"a",
        interval: float = 0.5,
        total_chunks: int = 1000,
        content_type: str = "text/plain",
    ) -> None:
        """Send one small chunk every `interval` seconds (a server that never quite finishes)."""

        async def handler(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": content_type})
            await response.prepare(request)
            try:
                for _ in range(total_chunks):
                    await response.write(chunk)
                    await asyncio.sleep(interval)  # the pacing is the behaviour under test
                await response.write_eof()
            except ConnectionError:
                pass
            return response

        self.add_handler(path, handler)

    def add_gzip_bomb(
        self, path: str, decoded_mb: int = 1024, *, with_length: bool = False
    ) -> None:
        """A valid gzip body of `decoded_mb` MB of zeros, about 1 KB on the wire per MB.

        Streamed (chunked) by default, so nothing large is ever built; with `with_length` the
        compressed body is sent whole with an honest Content-Length, so only counting the
        decoded bytes can stop it.
        """
        first, repeat = _gzip_zero_segments()
        headers = {"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"}

        def segments() -> Iterator[bytes]:
            crc = 0
            for index in range(decoded_mb):
                crc = zlib.crc32(_ZERO_MB, crc)
                yield first if index == 0 else repeat
            # An empty final deflate block, then the gzip trailer (CRC-32 and size mod 2**32).
            yield b"\x03\x00" + struct.pack("<II", crc, (decoded_mb * _MB) & 0xFFFFFFFF)

        if with_length:
            blob = b"".join(segments())

            async def sized(request: web.Request) -> web.StreamResponse:
                return web.Response(body=blob, headers=headers)

            self.add_handler(path, sized)
            return

        async def streamed(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers=headers)
            await response.prepare(request)
            try:
                for segment in segments():
                    await response.write(segment)
                await response.write_eof()
            except ConnectionError:
                pass
            return response

        self.add_handler(path, streamed)

    def add_oversized(
        self,
        path: str,
        size: int,
        *,
        declare_length: bool = False,
        content_type: str = "text/plain",
    ) -> None:
        """A body of `size` bytes streamed in 64 KB chunks, chunked unless `declare_length`."""
        piece = b"x" * (64 * 1024)

        async def handler(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"Content-Type": content_type})
            if declare_length:
                response.content_length = size
            await response.prepare(request)
            sent = 0
            try:
                while sent < size:
                    part = piece[: size - sent]
                    await response.write(part)
                    sent += len(part)
                await response.write_eof()
            except ConnectionError:
                pass
            return response

        self.add_handler(path, handler)

    def add_lying_length(
        self,
        path: str,
        claimed: int = 10,
        actual: bytes = b"",
        content_type: str = "text/html; charset=utf-8",
    ) -> None:
        """Declare Content-Length `claimed` but send `actual` bytes raw, then close."""

        async def handler(request: web.Request) -> web.StreamResponse:
            transport = request.transport
            assert transport is not None
            head = (
                f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {claimed}\r\nConnection: close\r\n\r\n"
            ).encode("ascii")
            transport.write(head + actual)
            transport.close()
            # aiohttp must not write a response of its own on the closed connection.
            raise asyncio.CancelledError

        self.add_handler(path, handler)

    def add_huge_headers(self, path: str, size: int, *, count: int = 1) -> None:
        """Respond with `count` headers of `size` bytes each."""
        value = "h" * size
        headers = {f"X-Huge-{index}": value for index in range(count)}

        async def handler(request: web.Request) -> web.StreamResponse:
            return web.Response(text="ok", headers=headers)

        self.add_handler(path, handler)
