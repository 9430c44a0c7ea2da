"""Who is calling: bearer token, login cookie sessions, and login throttling."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import secrets
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from admin_api.config import AdminConfig, Clock, token_digest
from bot.store.admin_sessions import AdminSessionRepository

log = logging.getLogger(__name__)

COOKIE_NAME = "playchat_admin"
MAX_TRACKED_CLIENTS = 10_000


def iso(timestamp: float) -> str:
    """A clock reading as the ISO-8601 UTC text stored in the database."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")


class LoginThrottle:
    """At most `max_failures` failed logins per client in any rolling `window` seconds."""

    def __init__(self, max_failures: int, window: float, clock: Clock) -> None:
        self._max = max_failures
        self._window = window
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, client: str, now: float) -> deque[float] | None:
        failures = self._failures.get(client)
        if failures is None:
            return None
        while failures and failures[0] <= now - self._window:
            failures.popleft()
        if not failures:
            del self._failures[client]
            return None
        return failures

    def retry_after(self, client: str) -> float | None:
        """Seconds until `client` may try again, or None when it may try now."""
        now = self._clock()
        failures = self._recent(client, now)
        if failures is None or len(failures) < self._max:
            return None
        return max(failures[0] + self._window - now, 0.001)

    def record_failure(self, client: str) -> None:
        """Count one failed login."""
        now = self._clock()
        if len(self._failures) >= MAX_TRACKED_CLIENTS:
            # Bounded memory under a spray of addresses: drop clients whose window has passed.
            for known in list(self._failures):
                self._recent(known, now)
        failures = self._failures.setdefault(client, deque(maxlen=self._max))
        failures.append(now)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller."""

    method: Literal["token", "cookie"]


@dataclass(frozen=True)
class LoginSession:
    """A fresh login: the cookie value (shown once, never stored) and its expiry."""

    token: str
    expires_at: str
    max_age: int


def _hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def bearer_of(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer …` header."""
    if authorization is None:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


class Authenticator:
    """Checks bearer tokens and session cookies; creates and ends login sessions."""

    def __init__(self, config: AdminConfig, sessions: AdminSessionRepository) -> None:
        self._config = config
        self._sessions = sessions

    def token_ok(self, token: str) -> bool:
        """Constant-time check of a bearer token against ADMIN_TOKEN."""
        expected = self._config.token
        return expected is not None and hmac.compare_digest(token_digest(token), expected)

    async def session_ok(self, cookie: str) -> bool:
        """True when the cookie names an unexpired login session."""
        if not cookie or len(cookie) > 256:
            return False
        return await self._sessions.is_valid(_hash_token(cookie), now=iso(self._config.clock()))

    async def identify(self, authorization: str | None, cookie: str | None) -> Principal | None:
        """The caller, or None. A bearer header, when present, is the only thing checked."""
        if authorization is not None:
            token = bearer_of(authorization)
            return Principal("token") if token is not None and self.token_ok(token) else None
        if cookie is not None and await self.session_ok(cookie):
            return Principal("cookie")
        return None

    async def password_ok(self, password: str) -> bool:
        """Verify the admin password off the event loop (scrypt costs tens of milliseconds)."""
        stored = self._config.password
        if stored is None:
            return False
        return await asyncio.to_thread(stored.verify, password)

    async def start_session(self) -> LoginSession:
        """Create a login session; only the token's SHA-256 is stored."""
        now = self._config.clock()
        token = secrets.token_urlsafe(32)
        max_age = self._config.session_max_age
        expires_at = iso(now + max_age)
        await self._sessions.purge_expired(now=iso(now))
        await self._sessions.create(_hash_token(token), created_at=iso(now), expires_at=expires_at)
        return LoginSession(token, expires_at, max_age)

    async def end_session(self, cookie: str | None) -> bool:
        """Delete the login session named by the cookie (logout)."""
        if not cookie:
            return False
        return await self._sessions.delete(_hash_token(cookie))
