"""The admin app factory and a server that runs it in the current event loop."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from admin_api.config import AdminConfig, check_bind
from admin_api.context import CONTEXT, AdminContext
from admin_api.deps import AdminDeps
from admin_api.middlewares import MIDDLEWARES
from admin_api.openapi import build_openapi
from admin_api.routing import AnyRoute, register
from admin_api.security import Authenticator, LoginThrottle, iso
from admin_api.turns import ChatTurns
from admin_api.views import (
    auth,
    chat,
    logs,
    memory,
    meta,
    models,
    notes,
    sessions,
    settings,
    system,
    tools,
    topics,
)
from bot.services import Services

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).parent / "static"
PAGE_ROUTES = frozenset({"admin_page", "admin_static"})
VIEWS = (meta, auth, notes, settings, logs, memory, models, system, tools, sessions, topics, chat)
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


def route_table(deps: AdminDeps) -> list[AnyRoute]:
    """Every API route, for the given optional services."""
    return [route for view in VIEWS for route in view.routes(deps)]


async def _page(request: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.path == "/" or request.path.startswith("/static/"):
        # Revalidate (ETag / Last-Modified) so an upgraded bot never runs a stale page.
        response.headers.setdefault("Cache-Control", "no-cache")


def _context(
    services: Services, config: AdminConfig, deps: AdminDeps, routes: list[AnyRoute]
) -> AdminContext:
    repos = services.repos
    public = frozenset(route.name for route in routes if route.public) | PAGE_ROUTES
    return AdminContext(
        services=services,
        deps=deps,
        config=config,
        auth=Authenticator(config, repos.admin_sessions),
        throttle=LoginThrottle(config.login_max_failures, config.login_window, config.clock),
        presets=repos.presets,
        stats=repos.stats,
        transfer=services.transfer,
        turns=ChatTurns(services.engine, repos.sessions, deps.notes),
        public_routes=public,
        openapi=build_openapi(routes),
    )


async def _lifecycle(app: web.Application) -> AsyncIterator[None]:
    ctx = app[CONTEXT]
    purged = await ctx.services.repos.admin_sessions.purge_expired(now=iso(ctx.config.clock()))
    log.debug("admin API starting; %d expired login sessions purged", purged)
    yield
    log.debug("admin API stopped")


def create_app(
    services: Services, *, config: AdminConfig | None = None, deps: AdminDeps | None = None
) -> web.Application:
    """The admin aiohttp application over `services` (config defaults to the settings')."""
    config = config or AdminConfig.from_settings(services.settings())
    deps = deps or AdminDeps.from_services(services)
    routes = route_table(deps)
    app = web.Application(middlewares=MIDDLEWARES, client_max_size=config.max_import_bytes)
    app[CONTEXT] = _context(services, config, deps, routes)
    register(app, routes)
    app.router.add_get("/", _page, name="admin_page")
    app.router.add_static("/static/", STATIC_DIR, name="admin_static")
    app.on_response_prepare.append(_security_headers)
    app.cleanup_ctx.append(_lifecycle)
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


async def serve(
    services: Services, *, config: AdminConfig | None = None, deps: AdminDeps | None = None
) -> AdminServer:
    """Start the admin API on config.host:config.port (port 0 picks a free one)."""
    config = config or AdminConfig.from_settings(services.settings())
    check_bind(config.host, password_set=config.password is not None)
    app = create_app(services, config=config, deps=deps)
    runner = web.AppRunner(app, shutdown_timeout=config.shutdown_timeout)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    port = int(runner.addresses[0][1])
    server = AdminServer(runner, config.host, port)
    log.info("admin API listening on %s", server.url)
    return server
