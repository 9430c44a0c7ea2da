"""Idle, slow and surplus connections to the admin API are closed, over raw sockets."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from admin_api.connections import ConnectionGuard
from admin_api.state import ADMIN
from tests.admin_api.conftest import Admin, StartAdmin

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def guard_of(admin: Admin) -> ConnectionGuard:
    return admin.server.runner.app[ADMIN].connections


async def connect(admin: Admin) -> Stream:
    return await asyncio.open_connection("127.0.0.1", admin.server.port)


async def until_closed(
    reader: asyncio.StreamReader, limit: float, started: float | None = None
) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and how long that took
    (from `started`, a loop.time() reading, else from now)."""
    loop = asyncio.get_running_loop()
    started = loop.time() if started is None else started
    received = b""
    try:
        async with asyncio.timeout(limit):
            while chunk := await reader.read(65536):
                received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for {limit} s")
    return received, loop.time() - started


async def trickle(writer: asyncio.StreamWriter, data: bytes, gap: float) -> None:
    """Send `data` one byte every `gap` seconds (a slow or hostile client) until refused."""
    try:
        for byte in data:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(gap)
    except ConnectionError:
        pass


async def exchange(admin: Admin, stream: Stream, path: str = "/health") -> tuple[int, bytes]:
    """One keep-alive GET over a raw connection: the status and body of the response."""
    reader, writer = stream
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{admin.server.port}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 3)
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")
    )
    body = await asyncio.wait_for(reader.readexactly(length), 3)
    return int(lines[0].split()[1]), body


def close(streams: list[Stream]) -> None:
    for _, writer in streams:
        writer.close()


async def test_silent_connections_are_closed_after_the_header_timeout(
    start_admin: StartAdmin,
) -> None:
    admin = await start_admin(admin_header_timeout=0.5)
    loop = asyncio.get_running_loop()
    # Each connection's deadline starts when it is accepted, so each is timed (and watched)
    # from its own connect: opening 20 took over 0.5 s on a loaded machine, and timed from
    # the last connect the first ones seemed to close at once.
    streams: list[Stream] = []
    watching: list[asyncio.Task[tuple[bytes, float]]] = []
    try:
        for _ in range(20):
            streams.append(await connect(admin))
            watching.append(asyncio.create_task(until_closed(streams[-1][0], 3, loop.time())))
        results = await asyncio.gather(*watching)
    finally:
        close(streams)
    for received, took in results:
        assert received == b""
        assert 0.4 <= took <= 2.0, took
    assert guard_of(admin).open_connections == 0


async def test_a_header_trickler_is_closed(start_admin: StartAdmin) -> None:
    admin = await start_admin(admin_header_timeout=1.0)
    reader, writer = await connect(admin)
    request = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{admin.server.port}\r\nX-Slow: "
    sender = asyncio.create_task(trickle(writer, request.encode() + b"a" * 100, 0.2))
    received, took = await until_closed(reader, 4)
    sender.cancel()
    assert received == b"", "no response to a request that never finished its headers"
    assert 0.9 <= took <= 2.5, took
    writer.close()


async def test_a_slow_body_is_closed(start_admin: StartAdmin) -> None:
    admin = await start_admin(admin_header_timeout=0.5, admin_body_timeout=1.5)
    reader, writer = await connect(admin)
    body = json.dumps({"password": "x" * 40}).encode()
    writer.write(
        (
            f"POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1:{admin.server.port}\r\n"
            f"Origin: {admin.origin}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
    )
    sender = asyncio.create_task(trickle(writer, body, 0.2))
    received, took = await until_closed(reader, 4)
    sender.cancel()
    assert received == b""
    assert 1.4 <= took <= 3.0, "closed by the body deadline (the header one stopped)"
    writer.close()


async def test_a_body_slower_than_the_header_timeout_but_in_time_is_served(
    start_admin: StartAdmin,
) -> None:
    admin = await start_admin(admin_header_timeout=0.3, admin_body_timeout=5)
    reader, writer = await connect(admin)
    body = json.dumps({"password": "wrong"}).encode()
    writer.write(
        (
            f"POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1:{admin.server.port}\r\n"
            f"Origin: {admin.origin}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode()
    )
    await trickle(writer, body, 0.05)  # about 1 s in all
    received, _ = await until_closed(reader, 3)
    assert received.startswith(b"HTTP/1.1 401 "), received[:80]
    writer.close()


async def test_an_idle_kept_alive_connection_is_closed(start_admin: StartAdmin) -> None:
    admin = await start_admin(admin_header_timeout=5, admin_keepalive_timeout=0.5)
    stream = await connect(admin)
    assert await exchange(admin, stream) == (200, b'{"status": "ok"}')
    received, took = await until_closed(stream[0], 3)
    assert received == b""
    assert 0.4 <= took <= 2.0, took
    close([stream])


async def test_a_kept_alive_connection_serves_requests_after_a_pause(
    start_admin: StartAdmin,
) -> None:
    admin = await start_admin(admin_header_timeout=0.3, admin_keepalive_timeout=5)
    stream = await connect(admin)
    assert (await exchange(admin, stream))[0] == 200
    await asyncio.sleep(0.6)  # idle past the header timeout, within the keep-alive one
    assert (await exchange(admin, stream))[0] == 200, "idle time is not header time"
    close([stream])


async def test_connections_over_the_cap_are_refused_at_once(start_admin: StartAdmin) -> None:
    admin = await start_admin(admin_max_connections=3, admin_header_timeout=1.0)
    held = [await connect(admin) for _ in range(3)]
    extra_reader, extra_writer = await connect(admin)
    received, took = await until_closed(extra_reader, 0.8)
    assert took < 0.8, "refused before any deadline"
    assert received == b"" or received.startswith(b"HTTP/1.1 503 "), received[:80]
    extra_writer.close()

    async with aiohttp.ClientSession() as fresh:
        with pytest.raises(aiohttp.ClientError):
            async with fresh.get(admin.url + "/health") as response:
                response.raise_for_status()

    for reader, _ in held:  # the header deadline frees the slots
        await until_closed(reader, 3)
    close(held)
    async with aiohttp.ClientSession() as fresh, fresh.get(admin.url + "/health") as response:
        assert response.status == 200
        assert await response.json() == {"status": "ok"}
    assert guard_of(admin).open_connections <= 1
