"""Helpers for the readiness tests."""

from __future__ import annotations

import socket


def closed_port() -> int:
    """A loopback port nothing listens on (bound, read back, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
