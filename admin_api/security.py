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
from bot.store.repos.admin_sessions import AdminSessionRepository

log = logging.getLogger(__name__)

COOKIE_NAME = "playchat_admin"
MAX_TRACKED_CLIENTS = 10_000


def iso(timestamp: float) -> str:
    """A clock reading as the ISO-8601 UTC text stored in the database."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="microseconds")


class LoginThrottled(Exception):
    """A client has used up its failed logins for now."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"retry after {retry_after:.1f} s")
        self.retry_after = retry_after


@dataclass(eq=False)
class LoginAttempt:
    """One reserved login attempt (compared by identity, so a refund removes exactly this one)."""

    client: str
    at: float


class LoginThrottle:
    """At most `max_failures` failed logins per client in any rolling `window` seconds.

    An attempt is counted as a failure when it starts, before the slow password check, and
    refunded only when it succeeds: concurrent guesses cannot all pass the check before any of
    them is recorded, so N guesses in flight cost N attempts.
    """

    def __init__(self, max_failures: int, window: float, clock: Clock) -> None:
        self._max = max_failures
        self._window = window
        self._clock = clock
        self._attempts: dict[str, deque[LoginAttempt]] = {}

    def _recent(self, client: str, now: float) -> deque[LoginAttempt] | None:
        attempts = self._attempts.get(client)
        if attempts is None:
            return None
        while attempts and attempts[0].at <= now - self._window:
            attempts.popleft()
        if not attempts:
            del self._attempts[client]
            return None
        return attempts

    def reserve(self, client: str) -> LoginAttempt:
        """Count one attempt for `client` now; raise LoginThrottled when it has none left."""
        now = self._clock()
        attempts = self._recent(client, now)
        if attempts is not None and len(attempts) >= self._max:
            raise LoginThrottled(max(attempts[0].at + self._window - now, 0.001))
        if attempts is None and len(self._attempts) >= MAX_TRACKED_CLIENTS:
            # Bounded memory under a spray of addresses: drop clients whose window has passed.
            for known in list(self._attempts):
                self._recent(known, now)
        attempt = LoginAttempt(client, now)
        self._attempts.setdefault(client, deque()).append(attempt)
        return attempt

    def refund(self, attempt: LoginAttempt) -> None:
        """Give back a reserved attempt that succeeded (it was not a failed login)."""
        attempts = self._attempts.get(attempt.client)
        if attempts is None or attempt not in attempts:
            return  # already outside the window
        attempts.remove(attempt)
        if not attempts:
            del self._attempts[attempt.client]


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
