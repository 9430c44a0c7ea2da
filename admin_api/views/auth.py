"""Password login (session cookie), logout, and who-am-I."""

from __future__ import annotations

import logging
import math
from typing import Annotated

from aiohttp import web

from admin_api.errors import ApiError
from admin_api.routing import Route, render
from admin_api.schemas.auth import LoginIn, LoginOut
from admin_api.schemas.common import OkOut
from admin_api.security import COOKIE_NAME, LoginThrottled, Principal
from admin_api.state import AdminState

log = logging.getLogger(__name__)


async def login(
    request: web.Request, admin: AdminState, body: LoginIn
) -> Annotated[web.StreamResponse, LoginOut]:
    """Log in with ADMIN_PASSWORD (sets an HttpOnly, SameSite=Strict session cookie)."""
    client = request.remote or "unknown"
    if admin.config.password is None:
        raise ApiError(
            401, "password_login_disabled", "Password login is off: ADMIN_PASSWORD is not set."
        )
    try:
        attempt = admin.throttle.reserve(client)
    except LoginThrottled as exc:
        log.warning("admin login throttled for %s", client)
        raise ApiError(
            429,
            "too_many_attempts",
            "Too many failed logins; try again later.",
            {"Retry-After": str(math.ceil(exc.retry_after))},
        ) from None
    if not await admin.auth.password_ok(body.password):
        log.warning("failed admin login from %s", client)
        raise ApiError(401, "wrong_password", "Wrong password.")
    admin.throttle.refund(attempt)
    session = await admin.auth.start_session()
    response = render(LoginOut(expires_at=session.expires_at))
    response.set_cookie(
        COOKIE_NAME,
        session.token,
        max_age=session.max_age,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=request.secure,
    )
    log.info("admin login from %s", client)
    return response


async def logout(request: web.Request, admin: AdminState) -> Annotated[web.StreamResponse, OkOut]:
    """Log out: end the login session and clear its cookie."""
    await admin.auth.end_session(request.cookies.get(COOKIE_NAME))
    response = render(OkOut())
    response.del_cookie(COOKIE_NAME, path="/")
    return response


async def whoami(request: web.Request, admin: AdminState) -> Principal:
    """How the caller is authenticated (401 when not)."""
    principal = await admin.auth.identify(
        request.headers.get("Authorization"), request.cookies.get(COOKIE_NAME)
    )
    if principal is None:  # pragma: no cover - the auth middleware already refused
        raise ApiError(401, "unauthorized", "Not authenticated.")
    return principal


def routes() -> list[Route]:
    """Auth routes."""
    return [
        Route("POST", "/api/auth/login", login, public=True),
        Route("POST", "/api/auth/logout", logout),
        Route("GET", "/api/auth/session", whoami),
    ]
