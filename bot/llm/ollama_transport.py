"""The HTTP transport under the official ollama client: aiohttp through `httpx-aiohttp`."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

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


class OllamaTransport(AiohttpTransport):
    """`AiohttpTransport` whose connection failures read as httpx's own would, and whose
    responses iterate lines without httpx's per-chunk layers (`LineResponse`).

    httpx-aiohttp maps every `aiohttp.ClientConnectionError` to `httpx.ConnectTimeout`, so a
    refused connection would read as "did not answer in time" and a dropped keep-alive as a
    timeout; here they become `httpx.ConnectError` and `httpx.RemoteProtocolError` again.
    """

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` over aiohttp; connection failures keep httpx's meaning."""
        try:
            response = await super().handle_async_request(request)
        except httpx.ConnectTimeout as exc:
            cause = exc.__cause__
            if isinstance(cause, aiohttp.ServerTimeoutError) or not isinstance(
                cause, aiohttp.ClientConnectionError
            ):
                raise
            if isinstance(cause, aiohttp.ClientConnectorError):
                raise httpx.ConnectError(str(cause), request=request) from cause
            raise httpx.RemoteProtocolError(str(cause), request=request) from cause
        return LineResponse(
            status_code=response.status_code,
            headers=response.headers,
            stream=response.stream,
            request=request,
            extensions=response.extensions,
        )
