"""The client's scheme and address as a trusted reverse proxy reports them.

`X-Forwarded-Proto`/`X-Forwarded-For` and RFC 7239 `Forwarded` are believed only when the peer
that sent them is in ADMIN_TRUSTED_PROXIES; anyone else could write them. Proxies append hops,
so the list is read from the right: each hop was written by the previous (trusted) sender, and
the walk stops at the first address that is not a trusted proxy — that is the client.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from aiohttp import hdrs, web

from admin_api.config import Network

log = logging.getLogger(__name__)

SCHEMES = frozenset({"http", "https"})


@dataclass(frozen=True)
class Hop:
    """What one proxy said about the connection it received: the sender's address, the scheme."""

    address: str | None
    proto: str | None


@dataclass(frozen=True)
class ClientView:
    """The scheme the client used and the client's address."""

    scheme: str
    remote: str | None


def parse_ip(value: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP from a header node (`1.2.3.4`, `1.2.3.4:80`, `[::1]:80`, `::1`), or None."""
    if not value:
        return None
    text = value.strip().strip('"')
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None  # "unknown", an obfuscated "_name", or garbage
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_trusted(address: str | None, proxies: Sequence[Network]) -> bool:
    """True when `address` is an IP inside one of the trusted proxy networks."""
    ip = parse_ip(address)
    return ip is not None and any(ip.version == net.version and ip in net for net in proxies)


def _values(request: web.BaseRequest, name: str) -> list[str]:
    joined = ",".join(request.headers.getall(name, []))
    return [part.strip() for part in joined.split(",") if part.strip()]


def _padded(values: list[str], length: int) -> list[str | None]:
    # Aligns lists from the right: the nearest proxy's values are last in each.
    padded: list[str | None] = [None] * (length - len(values))
    return padded + list(values)


def hops(request: web.BaseRequest) -> list[Hop]:
    """The forwarding hops in the request's headers, nearest proxy last.

    `Forwarded` wins when present; otherwise X-Forwarded-For and X-Forwarded-Proto are paired
    from the right (a proxy that only sets the scheme gives one hop without an address).
    """
    if hdrs.FORWARDED in request.headers:
        return [Hop(element.get("for"), element.get("proto")) for element in request.forwarded]
    addresses = _values(request, hdrs.X_FORWARDED_FOR)
    protos = _values(request, hdrs.X_FORWARDED_PROTO)
    length = max(len(addresses), len(protos))
    pairs = zip(_padded(addresses, length), _padded(protos, length), strict=True)
    return [Hop(address, proto) for address, proto in pairs]


def resolve(
    scheme: str, peer: str | None, forwarded: Sequence[Hop], proxies: Sequence[Network]
) -> ClientView:
    """The client's scheme and address from the connection's own `scheme` and `peer` and the
    `forwarded` hops (nearest last), believing hops only while their sender is trusted."""
    view_scheme, remote = scheme, peer
    if not proxies or not is_trusted(peer, proxies):
        return ClientView(scheme, peer)
    for hop in reversed(forwarded):
        proto = (hop.proto or "").strip().lower()
        if proto in SCHEMES:
            view_scheme = proto
        address = parse_ip(hop.address)
        if address is None:
            break
        remote = str(address)
        if not is_trusted(remote, proxies):
            break
    # A connection that is TLS itself is https whatever a proxy says.
    return ClientView("https" if scheme == "https" else view_scheme, remote)


def client_view(request: web.BaseRequest, proxies: Sequence[Network]) -> ClientView:
    """The scheme and address of the client of `request` (see `resolve`)."""
    if not proxies:
        return ClientView(request.scheme, request.remote)
    return resolve(request.scheme, request.remote, hops(request), proxies)
