"""Password login (session cookie), logout, and who-am-I."""

from __future__ import annotations

import logging
import math

from aiohttp import web

from admin_api.deps import AdminDeps
from admin_api.errors import ApiError
from admin_api.routing import AnyRoute, Empty, In, Route, render
from admin_api.schemas import LoginIn, LoginOut, OkOut, WhoAmIOut
from admin_api.security import COOKIE_NAME

log = logging.getLogger(__name__)


async def login(call: In[LoginIn, Empty, Empty]) -> web.StreamResponse:
    """Check the password; on success set an HttpOnly, SameSite=Strict session cookie."""
    ctx = call.ctx
    client = call.request.remote or "unknown"
    wait = ctx.throttle.retry_after(client)
    if wait is not None:
        log.warning("admin login throttled for %s", client)
        raise ApiError(
            429,
            "too_many_attempts",
            "Too many failed logins; try again later.",
            {"Retry-After": str(math.ceil(wait))},
        )
    if ctx.config.password is None:
        raise ApiError(
            401, "password_login_disabled", "Password login is off: ADMIN_PASSWORD is not set."
        )
    if not await ctx.auth.password_ok(call.body.password):
        ctx.throttle.record_failure(client)
        log.warning("failed admin login from %s", client)
        raise ApiError(401, "wrong_password", "Wrong password.")
    session = await ctx.auth.start_session()
    response = render(LoginOut(expires_at=session.expires_at))
    response.set_cookie(
        COOKIE_NAME,
        session.token,
        max_age=session.max_age,
        path="/",
        httponly=True,
        samesite="Strict",
        secure=call.request.secure,
    )
    log.info("admin login from %s", client)
    return response


async def logout(call: In[Empty, Empty, Empty]) -> web.StreamResponse:
    """End the login session and clear its cookie."""
    await call.ctx.auth.end_session(call.request.cookies.get(COOKIE_NAME))
    response = render(OkOut())
    response.del_cookie(COOKIE_NAME, path="/")
    return response


async def whoami(call: In[Empty, Empty, Empty]) -> WhoAmIOut:
    """How the caller is authenticated (401 when not)."""
    principal = await call.ctx.auth.identify(
        call.request.headers.get("Authorization"), call.request.cookies.get(COOKIE_NAME)
    )
    if principal is None:  # pragma: no cover - the auth middleware already refused
        raise ApiError(401, "unauthorized", "Not authenticated.")
    return WhoAmIOut(method=principal.method)


def routes(deps: AdminDeps) -> list[AnyRoute]:
    """Auth routes."""
    return [
        Route(
            method="POST",
            path="/api/auth/login",
            handler=login,
            summary="Log in with ADMIN_PASSWORD (sets the session cookie)",
            tag="auth",
            body=LoginIn,
            query=Empty,
            params=Empty,
            response=LoginOut,
            public=True,
        ),
        Route(
            method="POST",
            path="/api/auth/logout",
            handler=logout,
            summary="Log out",
            tag="auth",
            body=Empty,
            query=Empty,
            params=Empty,
            response=OkOut,
        ),
        Route(
            method="GET",
            path="/api/auth/session",
            handler=whoami,
            summary="How the caller is authenticated",
            tag="auth",
            body=Empty,
            query=Empty,
            params=Empty,
            response=WhoAmIOut,
        ),
    ]
