"""The HTTP transport under the official ollama client: aiohttp through `httpx-aiohttp`."""

from __future__ import annotations

import logging

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

log = logging.getLogger(__name__)


class OllamaTransport(AiohttpTransport):
    """`AiohttpTransport` whose connection failures read as httpx's own would.

    httpx-aiohttp maps every `aiohttp.ClientConnectionError` to `httpx.ConnectTimeout`, so a
    refused connection would read as "did not answer in time" and a dropped keep-alive as a
    timeout; here they become `httpx.ConnectError` and `httpx.RemoteProtocolError` again.
    """

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` over aiohttp; connection failures keep httpx's meaning."""
        try:
            return await super().handle_async_request(request)
        except httpx.ConnectTimeout as exc:
            cause = exc.__cause__
            if isinstance(cause, aiohttp.ServerTimeoutError) or not isinstance(
                cause, aiohttp.ClientConnectionError
            ):
                raise
            if isinstance(cause, aiohttp.ClientConnectorError):
                raise httpx.ConnectError(str(cause), request=request) from cause
            raise httpx.RemoteProtocolError(str(cause), request=request) from cause
