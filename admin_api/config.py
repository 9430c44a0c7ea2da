"""Admin API configuration: bind address, hashed credentials, limits, the bind-safety check."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.config import Settings
from bot.errors import PlayChatError

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
MIN_TOKEN_CHARS = 16


class UnsafeBindError(PlayChatError):
    """The admin API was asked to listen beyond loopback without a password."""


@dataclass(frozen=True)
class PasswordHash:
    """A scrypt hash of the admin password (the plain text is never kept)."""

    salt: bytes = field(repr=False)
    digest: bytes = field(repr=False)
    n: int = 2**14
    r: int = 8
    p: int = 1

    @classmethod
    def create(cls, password: str) -> PasswordHash:
        """Hash `password` with a fresh random salt."""
        salt = secrets.token_bytes(16)
        return cls(salt=salt, digest=cls._derive(password, salt, 2**14, 8, 1))

    @staticmethod
    def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
        return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=32)

    def verify(self, password: str) -> bool:
        """True when `password` matches (constant-time comparison of the derived keys)."""
        candidate = self._derive(password, self.salt, self.n, self.r, self.p)
        return hmac.compare_digest(candidate, self.digest)


def token_digest(token: str) -> bytes:
    """SHA-256 of a bearer token; comparing digests keeps the compare length-independent."""
    return hashlib.sha256(token.encode("utf-8")).digest()


def is_loopback_host(host: str) -> bool:
    """True for 'localhost' and loopback IP literals; False for '', 0.0.0.0 and real hosts."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, password_set: bool) -> None:
    """Refuse a non-loopback bind address unless ADMIN_PASSWORD is set."""
    if not is_loopback_host(host) and not password_set:
        raise UnsafeBindError(
            f"ADMIN_HOST={host!r} is not a loopback address, so the admin API would be "
            "reachable from other machines: set ADMIN_PASSWORD, or use ADMIN_HOST=127.0.0.1 "
            "(or ADMIN_ENABLED=false)."
        )


def check_settings(settings: Settings) -> None:
    """`check_bind` for the configured ADMIN_HOST/ADMIN_PASSWORD (used by both entry points)."""
    if settings.admin_enabled:
        check_bind(settings.admin_host, password_set=bool(settings.secret("admin_password")))


_EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::", "[::]"})  # noqa: S104 - names, not a bind


def start_warnings(settings: Settings) -> list[str]:
    """One sentence per risky admin API set-up: locked (nobody can log in) or exposed."""
    if not settings.admin_enabled:
        return []
    where = f"{settings.admin_host}:{settings.admin_port}"
    warnings = []
    if not settings.secret("admin_password") and not settings.secret("admin_token"):
        warnings.append(
            f"The admin API on {where} is locked: neither ADMIN_PASSWORD nor ADMIN_TOKEN is "
            "set, so nobody can log in; set ADMIN_PASSWORD (browser login) or ADMIN_TOKEN "
            "(scripts, 16+ characters) in .env and restart."
        )
    host = settings.admin_host.strip().lower()
    if host in _EVERY_INTERFACE:
        warnings.append(
            f"The admin API listens on every network interface ({where}): any machine that can "
            "reach this port gets the login page, over plain HTTP unless a proxy adds HTTPS; "
            "set ADMIN_HOST to one address (127.0.0.1 behind a reverse proxy on this machine)."
        )
    elif not is_loopback_host(host) and not settings.admin_trusted_proxies:
        warnings.append(
            f"The admin API listens on {where}, beyond this machine, with no reverse proxy "
            "configured: the password travels over plain HTTP; put an HTTPS proxy in front "
            "(and list it in ADMIN_TRUSTED_PROXIES) or set ADMIN_HOST=127.0.0.1."
        )
    return warnings


@dataclass(frozen=True)
class AdminConfig:
    """Everything the admin API needs to know besides the services it manages."""

    host: str = "127.0.0.1"
    port: int = 8765
    password: PasswordHash | None = None
    token: bytes | None = field(default=None, repr=False)  # SHA-256 of ADMIN_TOKEN
    allowed_hosts: tuple[str, ...] = ()
    session_max_age: int = 12 * 3600
    max_body_bytes: int = 2 * 1024 * 1024
    max_import_bytes: int = 20 * 1024 * 1024
    login_max_failures: int = 5
    login_window: float = 60.0
    shutdown_timeout: float = 5.0
    header_timeout: float = 10.0
    body_timeout: float = 60.0
    keepalive_timeout: float = 15.0
    max_connections: int = 100
    trusted_proxies: tuple[Network, ...] = ()
    access_log: bool = False  # one aiohttp.access line per request (ADMIN_ACCESS_LOG)
    clock: Clock = time.time

    @classmethod
    def from_settings(
        cls, settings: Settings, *, allowed_hosts: tuple[str, ...] = (), clock: Clock = time.time
    ) -> AdminConfig:
        """Hash ADMIN_PASSWORD and ADMIN_TOKEN now; only the hashes are kept."""
        password = settings.secret("admin_password")
        token = settings.secret("admin_token")
        if token and len(token) < MIN_TOKEN_CHARS:
            log.warning("ADMIN_TOKEN is shorter than %d characters; use a longer one", 16)
        return cls(
            host=settings.admin_host,
            port=settings.admin_port,
            password=PasswordHash.create(password) if password else None,
            token=token_digest(token) if token else None,
            allowed_hosts=tuple(host.strip().lower() for host in allowed_hosts if host.strip()),
            header_timeout=settings.admin_header_timeout,
            body_timeout=settings.admin_body_timeout,
            keepalive_timeout=settings.admin_keepalive_timeout,
            max_connections=settings.admin_max_connections,
            trusted_proxies=tuple(
                ipaddress.ip_network(net) for net in settings.admin_trusted_proxies
            ),
            access_log=settings.admin_access_log,
            clock=clock,
        )

    @property
    def auth_configured(self) -> bool:
        """True when a password or a token can unlock the API."""
        return self.password is not None or self.token is not None


def admin_config(settings: Settings, *, clock: Clock = time.time) -> AdminConfig:
    """The admin API configuration the entry points use (ADMIN_ALLOWED_HOSTS included)."""
    return AdminConfig.from_settings(
        settings, allowed_hosts=tuple(settings.admin_allowed_hosts), clock=clock
    )
