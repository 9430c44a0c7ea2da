"""The one chokepoint for outbound HTTP: public addresses only, capped size, one total deadline."""

from __future__ import annotations

import asyncio
import codecs
import contextvars
import ipaddress
import logging
import re
import socket
import ssl
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Self

import aiohttp
from aiohttp.abc import AbstractResolver
from aiohttp.connector import AddrInfoType
from yarl import URL

from bot.errors import UserFacingError

log = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_MAX_BYTES: Final = 10 * 1024 * 1024
DEFAULT_USER_AGENT: Final = "PlayChat/0.1 (+self-hosted Discord bot)"
MAX_URL_LENGTH: Final = 8192
_READ_CHUNK: Final = 64 * 1024
_REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
_REFUSED_MEDIA: Final = frozenset({"image", "audio", "video"})
# aiohttp's own defaults, pinned so a library upgrade cannot loosen them silently.
_MAX_LINE_SIZE: Final = 8190
_MAX_FIELD_SIZE: Final = 8190
_MAX_HEADERS: Final = 128


def _networks(*cidrs: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


# `is_global` alone misses several of these (multicast, 192.0.0.0/24 anycast, fec0::/10,
# 64:ff9b:1::/48, 3fff::/20, 5f00::/16 on this Python), so they are listed explicitly.
_DENIED_V4: Final = _networks(
    "0.0.0.0/8",  # "this network", includes 0.0.0.0
    "10.0.0.0/8",
    "100.64.0.0/10",  # CGNAT; also Alibaba's metadata 100.100.100.200
    "127.0.0.0/8",
    "169.254.0.0/16",  # link-local; cloud metadata 169.254.169.254
    "172.16.0.0/12",
    "192.0.0.0/24",  # IETF protocol assignments; Oracle's metadata 192.0.0.192
    "192.0.2.0/24",
    "192.88.99.0/24",  # 6to4 relay anycast
    "192.168.0.0/16",
    "198.18.0.0/15",  # benchmarking
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",  # multicast
    "240.0.0.0/4",  # reserved, includes 255.255.255.255
)
_DENIED_V6: Final = _networks(
    "::/96",  # unspecified, loopback and the deprecated IPv4-compatible form
    "64:ff9b:1::/48",  # local-use NAT64
    "100::/64",  # discard-only
    "2001::/23",  # IETF protocol assignments (Teredo is unwrapped first)
    "2001:db8::/32",
    "3fff::/20",  # documentation
    "5f00::/16",  # SRv6 SIDs
    "fc00::/7",  # unique local; AWS metadata fd00:ec2::254
    "fe80::/10",
    "fec0::/10",  # deprecated site-local
    "ff00::/8",  # multicast
)
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAMES: Final = ("localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback")

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+", re.IGNORECASE)

# Addresses the socket factory refused during the current fetch; a ContextVar because the
# factory is a connector-wide callback and concurrent fetches share the connector.
_refused: contextvars.ContextVar[list[IPAddress] | None] = contextvars.ContextVar(
    "safe_http_refused", default=None
)


class FetchError(UserFacingError):
    """A fetch failed; the text is a full sentence meant for the model."""


class BlockedURLError(FetchError):
    """The URL or an address it leads to is not allowed; the text starts with 'Blocked URL: '."""


class UnsupportedContentError(FetchError):
    """The response is an image, audio or video, which the text tools cannot read."""


class TooLargeError(FetchError):
    """The decoded response body is larger than the fetcher's byte limit."""


class _RefusedAddressError(OSError):
    """Raised by the socket factory; aiohttp treats it like any failed connect attempt."""


@dataclass(frozen=True)
class FetchPolicy:
    """Which destination addresses are allowed. Production: FetchPolicy.strict()."""

    allowed_networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def strict(cls) -> FetchPolicy:
        """The only production policy: public unicast addresses only, no exceptions."""
        return cls()

    @classmethod
    def allowing(cls, *networks: str) -> FetchPolicy:
        """A test policy that also allows the given networks, e.g. "127.0.0.2/32"."""
        return cls(tuple(ipaddress.ip_network(network) for network in networks))

    def is_allowed(self, ip: IPAddress) -> bool:
        """Whether a connection to this exact address may be made."""
        if any(ip in network for network in self.allowed_networks):
            return True
        return is_public_address(ip)


def is_public_address(ip: IPAddress) -> bool:
    """Whether `ip` is a public unicast address, judging wrapped IPv4 by the embedded address."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _is_public_v4(ip)
    if ip.ipv4_mapped is not None:
        return _is_public_v4(ip.ipv4_mapped)
    if ip in _NAT64:
        return _is_public_v4(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        return _is_public_v4(ip.sixtofour)
    if ip.teredo is not None:
        server, client = ip.teredo
        if not (_is_public_v4(server) and _is_public_v4(client)):
            return False
    return ip.is_global and not any(ip in network for network in _DENIED_V6)


def _is_public_v4(ip: ipaddress.IPv4Address) -> bool:
    return ip.is_global and not any(ip in network for network in _DENIED_V4)


def _parse_ipv4_part(text: str) -> int:
    lowered = text.lower()
    if lowered.startswith("0x"):
        return int(lowered[2:] or "0", 16)
    if len(text) > 1 and text.startswith("0"):
        return int(text, 8)  # ValueError for 8 or 9, as inet_aton refuses them too
    return int(text, 10)


def parse_host_literal(host: str) -> IPAddress | None:
    """Parse an IP-literal host in every spelling resolvers accept; None for a host name.

    Raises ValueError for a host that looks numeric but is no valid address (like "1.2.3.4.5"),
    as browsers do: a host whose last label is a number is an address or nothing.
    """
    if ":" in host:
        return ipaddress.IPv6Address(host.strip("[]"))
    labels = host.removesuffix(".").split(".")
    if not _NUMERIC_LABEL.fullmatch(labels[-1]):
        return None
    if len(labels) > 4 or not all(_NUMERIC_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"invalid IPv4 address {host!r}")
    parts = [_parse_ipv4_part(label) for label in labels]
    *leading, last = parts
    if any(part > 0xFF for part in leading) or last >= 256 ** (5 - len(parts)):
        raise ValueError(f"invalid IPv4 address {host!r}")
    value = last
    for index, part in enumerate(leading):
        value |= part << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _is_local_name(host: str) -> bool:
    name = host.removesuffix(".")
    return name in _LOCAL_NAMES or name.endswith(".localhost")


def _parse_content_type(raw: str) -> tuple[str, str | None]:
    media, _, params = raw.partition(";")
    media_type = media.strip().lower() or "application/octet-stream"
    charset: str | None = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() != "charset":
            continue
        candidate = value.strip().strip("\"'").strip().lower()
        try:
            codecs.lookup(candidate)
        except LookupError:
            # An unknown charset is as good as none: callers then sniff or assume UTF-8.
            charset = None
        else:
            charset = candidate
    return media_type, charset


@dataclass(frozen=True)
class FetchedDocument:
    """A fetched response: decoded body plus what is needed to interpret it."""

    url: str
    final_url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes


def _url_problem(raw: object) -> tuple[str | None, URL | None]:
    """Why `raw` is not a fetchable http(s) URL with a host (reason, None), or (None, url)."""
    if not isinstance(raw, str) or not raw.strip():
        return "not a URL", None
    if len(raw) > MAX_URL_LENGTH:
        return f"longer than {MAX_URL_LENGTH} characters", None
    try:
        url = URL(raw.strip())
    except (ValueError, TypeError, UnicodeError):
        return "not a valid URL", None
    if url.scheme not in ("http", "https"):
        return "only http and https URLs can be fetched", None
    if not url.absolute or not url.raw_host:
        return "the URL has no host", None
    if url.raw_user is not None or url.raw_password is not None:
        return "URLs with credentials are not allowed", None
    return None, url


class SafeFetcher:
    """Fetches public http(s) URLs under a destination policy, a size cap and a deadline."""

    def __init__(
        self,
        policy: FetchPolicy,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        timeout: float = 20.0,
        max_redirects: int = 6,
        resolver: AbstractResolver | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        if max_bytes <= 0 or timeout <= 0 or max_redirects < 0:
            raise ValueError("max_bytes and timeout must be positive, max_redirects >= 0")
        self._policy = policy
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._max_redirects = max_redirects
        self._resolver = resolver
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP session; later fetches fail."""
        self._closed = True
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def fetch(self, url: str, *, accept: str = "*/*") -> FetchedDocument:
        """Fetch `url` (GET, following redirects); raises only FetchError subclasses."""
        target = self._checked_url(url)
        if self._closed:
            raise FetchError(f"Failed to fetch {url}: the fetcher is closed.")
        refused: list[IPAddress] = []
        token = _refused.set(refused)
        try:
            async with asyncio.timeout(self._timeout):
                return await self._follow(url, target, accept)
        except FetchError:
            raise
        except Exception as exc:
            raise self._translate(url, exc, refused) from None
        finally:
            _refused.reset(token)

    def _translate(self, url: str, exc: Exception, refused: list[IPAddress]) -> FetchError:
        """Turn any failure into a FetchError with a sentence the model can act on."""
        if refused and isinstance(exc, aiohttp.ClientConnectorError):
            addresses = ", ".join(sorted({str(ip) for ip in refused}))
            return BlockedURLError(
                f"Blocked URL: {url} (it leads to a non-public address: {addresses})."
            )
        if isinstance(exc, TimeoutError):
            return FetchError(
                f"Failed to fetch {url}: no complete response within {self._timeout:g} s."
            )
        if not isinstance(exc, aiohttp.ClientError | OSError | ValueError | ssl.SSLError):
            log.error("unexpected error fetching a URL", exc_info=exc)
        return FetchError(f"Failed to fetch {url}: {_describe(exc)}")

    def _checked_url(self, raw: str, *, redirected_from: str | None = None) -> URL:
        """Parse and pre-check a URL; the connect-time address check is the authoritative one."""
        text = raw if isinstance(raw, str) else repr(raw)
        shown = text if len(text) <= 200 else text[:200] + "…"
        via = f"redirect from {redirected_from}: " if redirected_from else ""

        reason, url = _url_problem(raw)
        if reason is None and url is not None:
            reason = self._host_problem(url.raw_host or "")
        if reason is not None or url is None:
            raise BlockedURLError(f"Blocked URL: {shown} ({via}{reason or 'not a URL'}).")
        return url.with_fragment(None)

    def _host_problem(self, host: str) -> str | None:
        """Why a URL's host may not be fetched, or None."""
        try:
            literal = parse_host_literal(host)
        except ValueError:
            return "not a valid host"
        if literal is None:
            if not _HOSTNAME.fullmatch(host.removesuffix(".")):
                return "not a valid host"
            if _is_local_name(host):
                return "local host names are not allowed"
        elif not self._policy.is_allowed(literal):
            return f"{literal} is not a public address"
        return None

    def _session_or_new(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                socket_factory=self._checked_socket,
                resolver=self._resolver,
                limit=32,
                limit_per_host=4,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                trust_env=False,
                auto_decompress=True,
                cookie_jar=aiohttp.DummyCookieJar(),
                headers={"User-Agent": self._user_agent},
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._timeout),
                max_line_size=_MAX_LINE_SIZE,
                max_field_size=_MAX_FIELD_SIZE,
                max_headers=_MAX_HEADERS,
                read_bufsize=_READ_CHUNK,
            )
        return self._session

    def _checked_socket(self, addr_info: AddrInfoType) -> socket.socket:
        """Socket factory: refuse before connecting unless the resolved address is allowed."""
        family, type_, proto, _, address = addr_info
        try:
            ip = ipaddress.ip_address(str(address[0]))
        except ValueError:
            ip = None
        if ip is None or not self._policy.is_allowed(ip):
            refused = _refused.get()
            if refused is not None and ip is not None:
                refused.append(ip)
            log.warning("refused outbound connection to %s", address[0])
            raise _RefusedAddressError(f"connection to non-public address {address[0]} refused")
        return socket.socket(family=family, type=type_, proto=proto)

    async def _follow(self, url: str, target: URL, accept: str) -> FetchedDocument:
        session = self._session_or_new()
        current = target
        for hop in range(self._max_redirects + 1):
            async with session.get(
                current, headers={"Accept": accept}, allow_redirects=False
            ) as response:
                location = response.headers.get("Location")
                if response.status in _REDIRECT_STATUSES and location:
                    if hop == self._max_redirects:
                        raise FetchError(
                            f"Failed to fetch {url}: Too many redirects "
                            f"(more than {self._max_redirects})."
                        )
                    try:
                        joined = str(response.url.join(URL(location)))
                    except (ValueError, TypeError, UnicodeError):
                        joined = location
                    current = self._checked_url(joined, redirected_from=str(response.url))
                    log.debug("redirect %d for %s", hop + 1, url)
                    continue
                if not 200 <= response.status < 300:
                    raise FetchError(f"Failed to fetch {url}: HTTP {response.status}")
                return await self._read(url, response)
        raise AssertionError("unreachable: the loop returns or raises")

    async def _read(self, url: str, response: aiohttp.ClientResponse) -> FetchedDocument:
        media_type, charset = _parse_content_type(response.headers.get("Content-Type", ""))
        if media_type.partition("/")[0] in _REFUSED_MEDIA:
            raise UnsupportedContentError(
                f"Failed to fetch {url}: {media_type} content is not supported "
                "(images, audio and video cannot be read as text)."
            )
        limit_text = _format_size(self._max_bytes)
        declared = response.content_length
        if declared is not None and declared > self._max_bytes:
            raise TooLargeError(f"Failed to fetch {url}: the response is larger than {limit_text}.")
        body = bytearray()
        # Counted after decompression: a small gzip body can expand without bound.
        async for chunk in response.content.iter_chunked(_READ_CHUNK):
            if len(body) + len(chunk) > self._max_bytes:
                raise TooLargeError(
                    f"Failed to fetch {url}: the response is larger than {limit_text}."
                )
            body += chunk
        return FetchedDocument(
            url=url,
            final_url=str(response.url),
            status=response.status,
            content_type=media_type,
            charset=charset,
            body=bytes(body),
        )


def _format_size(size: int) -> str:
    if size % (1024 * 1024) == 0:
        return f"{size // (1024 * 1024)} MB"
    return f"{size} bytes"


def _describe(exc: BaseException) -> str:
    """A short sentence for the model; never the aiohttp type name or internals."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return "the server's TLS certificate could not be verified."
    if isinstance(exc, aiohttp.ClientConnectorSSLError | ssl.SSLError):
        return "the TLS handshake failed."
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"the host name {exc.host} could not be resolved."
    if isinstance(exc, aiohttp.ClientConnectorError):
        detail = exc.os_error.strerror or str(exc.os_error) or "connection failed"
        return f"could not connect to {exc.host}:{exc.port} ({detail})."
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection without a complete response."
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "the response body was incomplete or malformed."
    if isinstance(exc, aiohttp.ClientResponseError):
        message = str(exc.message)
        if "Got more than" in message or "Too many" in message or "too long" in message.lower():
            return "the server sent response headers that are too large."
        return "the server sent an invalid HTTP response."
    if isinstance(exc, aiohttp.InvalidURL):
        return "the URL is not valid."
    if isinstance(exc, OSError):
        return f"network error ({exc.strerror or exc})."
    return "the request failed."
