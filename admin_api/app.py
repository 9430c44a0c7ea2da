"""The admin app factory and a server that runs it in the current event loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import log as web_log
from aiohttp import web

from admin_api.config import AdminConfig, check_bind
from admin_api.connections import ConnectionGuard, GuardedSite
from admin_api.middlewares import MIDDLEWARES
from admin_api.openapi import OpenApiDocument
from admin_api.routing import Route, register
from admin_api.security import Authenticator, LoginThrottle, iso
from admin_api.state import ADMIN, SERVICES, AdminState
from admin_api.turns import ChatTurns
from admin_api.views import (
    activity,
    auth,
    backup,
    chat,
    conversations,
    directory,
    live_log,
    logs,
    members,
    memory,
    meta,
    models,
    notes,
    readiness,
    search,
    sessions,
    settings,
    spaces,
    status,
    system,
    tools,
    topics,
    usage,
)
from bot.services import Services

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
PAGE_ROUTES = frozenset({"admin_page", "admin_static"})
VIEWS = (
    meta,
    auth,
    spaces,
    notes,
    settings,
    live_log,
    logs,
    memory,
    members,
    models,
    system,
    tools,
    sessions,
    topics,
    directory,
    chat,
    backup,
    readiness,
    activity,
    usage,
    conversations,
    search,
    status,
)
# The page runs only its own files: no inline script or style, no framing, no foreign fetches.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def route_table() -> list[Route]:
    """Every API route."""
    return [route for view in VIEWS for route in view.routes()]


async def _page(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.path == "/" or request.path.startswith("/static/"):
        # Revalidate (ETag / Last-Modified) so an upgraded bot never runs a stale page.
        response.headers.setdefault("Cache-Control", "no-cache")


def _state(services: Services, config: AdminConfig, routes: list[Route]) -> AdminState:
    repos = services.repos
    public = frozenset(route.name for route in routes if route.public) | PAGE_ROUTES
    return AdminState(
        config=config,
        auth=Authenticator(config, repos.admin_sessions),
        throttle=LoginThrottle(config.login_max_failures, config.login_window, config.clock),
        turns=ChatTurns(
            services.engine,
            repos.sessions,
            services.notes,
            lambda: services.settings().local_space_id,
        ),
        connections=ConnectionGuard(
            header_timeout=config.header_timeout,
            body_timeout=config.body_timeout,
            max_connections=config.max_connections,
        ),
        public_routes=public,
        openapi=OpenApiDocument(routes),
    )


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    now = iso(app[ADMIN].config.clock())
    purged = await app[SERVICES].repos.admin_sessions.purge_expired(now=now)
    log.debug("admin API starting; %d expired login sessions purged", purged)
    yield
    log.debug("admin API stopped")


async def _end_streams(app: web.Application) -> None:
    # Before the server waits for open requests: endless streams end now, not at the timeout.
    app[SERVICES].live_log.end_streams()
    status.end_streams(app)


def create_app(services: Services, *, config: AdminConfig | None = None) -> web.Application:
    """The admin aiohttp application over `services` (config defaults to the settings')."""
    config = config or AdminConfig.from_settings(services.settings())
    routes = route_table()
    app = web.Application(middlewares=MIDDLEWARES, client_max_size=config.max_import_bytes)
    app[SERVICES] = services
    app[ADMIN] = _state(services, config, routes)
    app[status.STREAMS_END] = asyncio.Event()
    register(app, routes)
    app.router.add_get("/", _page, name="admin_page")
    app.router.add_static("/static/", STATIC_DIR, name="admin_static")
    app.on_response_prepare.append(_security_headers)
    app.cleanup_ctx.append(_lifecycle)
    app.on_shutdown.append(_end_streams)
    return app


@dataclass
class AdminServer:
    """A running admin API; `close()` (or leaving `async with`) stops it."""

    runner: web.AppRunner
    host: str
    port: int

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:8765."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def close(self) -> None:
        """Stop listening and run the app's cleanup."""
        await self.runner.cleanup()

    async def __aenter__(self) -> AdminServer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def serve(services: Services, *, config: AdminConfig | None = None) -> AdminServer:
    """Start the admin API on config.host:config.port (port 0 picks a free one)."""
    config = config or AdminConfig.from_settings(services.settings())
    check_bind(config.host, password_set=config.password is not None)
    app = create_app(services, config=config)
    # The page's own requests (a poll every few seconds) would fill the log and the live log.
    runner = web.AppRunner(
        app,
        shutdown_timeout=config.shutdown_timeout,
        keepalive_timeout=config.keepalive_timeout,
        access_log=web_log.access_logger if config.access_log else None,
    )
    await runner.setup()
    try:
        site = GuardedSite(runner, app[ADMIN].connections, config.host, config.port)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    port = int(runner.addresses[0][1])
    server = AdminServer(runner, config.host, port)
    log.info("admin API listening on %s", server.url)
    return server
