"""Middlewares, outermost first: connection deadlines, errors → JSON, the client behind a trusted
proxy, Host check, Origin check, authentication."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

from admin_api.config import LOOPBACK_NAMES
from admin_api.errors import ApiError, from_user_error
from admin_api.forwarded import client_view
from admin_api.security import COOKIE_NAME, bearer_of
from admin_api.state import ADMIN, AdminState
from bot.errors import UserFacingError

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

HEALTH_PATH = "/health"
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_UNSPECIFIED = frozenset({"", "0.0.0.0", "::", "[::]"})  # noqa: S104 - names, not a bind


def error_json(error: ApiError) -> web.Response:
    """The JSON response for an error."""
    body: dict[str, object] = {"error": error.code, "detail": error.detail}
    if error.fields:
        body |= {"field": next(iter(error.fields)), "fields": error.fields}
    response = web.json_response(body, status=error.status)
    response.headers.update(error.headers)
    return response


def _http_error(exc: web.HTTPException) -> ApiError:
    code = exc.reason.lower().replace(" ", "_") or "error"
    detail = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
    headers = {key: value for key, value in exc.headers.items() if key in ("Allow", "Retry-After")}
    return ApiError(exc.status, code, detail or exc.reason, headers)


@web.middleware
async def connection_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Tell the connection guard when a request's headers are in and when it is done."""
    connections = request.app[ADMIN].connections
    connections.request_started(request)
    try:
        return await handler(request)
    finally:
        connections.request_finished(request)


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure becomes JSON {error, detail}; request bodies are never echoed or logged."""
    try:
        return await handler(request)
    except ApiError as exc:
        return error_json(exc)
    except UserFacingError as exc:
        return error_json(from_user_error(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return error_json(_http_error(exc))
    except (ConnectionResetError, TimeoutError):
        raise
    except Exception:
        log.exception("admin API %s %s failed", request.method, request.path)
        return error_json(ApiError(500, "internal_error", "Internal server error."))


@web.middleware
async def forwarded_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Behind a trusted proxy, the request carries the client's scheme and address."""
    view = client_view(request, request.app[ADMIN].config.trusted_proxies)
    if view.scheme != request.scheme or view.remote != request.remote:
        request = request.clone(scheme=view.scheme, remote=view.remote or request.remote or "")
    return await handler(request)


def _split_host(value: str) -> tuple[str, int | None]:
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        name += "]"
        port_text = rest[1:] if rest.startswith(":") else ""
    else:
        name, _, port_text = value.partition(":")
    if not port_text:
        return name, None
    if not port_text.isdigit() or len(port_text) > 5:
        raise ValueError(value)
    return name, int(port_text)


def _local_port(request: web.Request) -> int | None:
    transport = request.transport
    sockname = transport.get_extra_info("sockname") if transport is not None else None
    if isinstance(sockname, tuple) and len(sockname) >= 2:
        return int(sockname[1])
    return None


def _bind_name(host: str) -> str:
    host = host.strip().lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def host_allowed(state: AdminState, request: web.Request) -> bool:
    """The Host header names this server: a loopback name (or the bind host) on the port the
    connection arrived on, or an entry of the configured allowed hosts."""
    header = request.headers.get("Host")
    if not header:
        return False
    try:
        name, port = _split_host(header)
    except ValueError:
        return False
    if port is None:
        port = 443 if request.secure else 80
    local_names = set(LOOPBACK_NAMES)
    bind = _bind_name(state.config.host)
    if bind not in _UNSPECIFIED:
        local_names.add(bind)
    if name in local_names and port == _local_port(request):
        return True
    for entry in state.config.allowed_hosts:
        entry_name, entry_port = _split_host(entry)
        if entry_name == name and entry_port in (None, port):
            return True
    return False


@web.middleware
async def host_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """403 unless the Host header is this server's (defeats DNS rebinding)."""
    if request.path != HEALTH_PATH and not host_allowed(request.app[ADMIN], request):
        raise ApiError(403, "forbidden_host", "The Host header does not name this server.")
    return await handler(request)


def _origin_of(request: web.Request) -> str | None:
    origin = request.headers.get("Origin")
    if origin is not None:
        return origin.strip().lower()
    referer = request.headers.get("Referer")
    if referer is None:
        return None
    parts = urlsplit(referer.strip())
    return f"{parts.scheme}://{parts.netloc}".lower()


@web.middleware
async def origin_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """State-changing requests must come from this server's own pages (defeats CSRF).

    Without Origin or Referer only bearer-token requests (scripts) are accepted; a TLS proxy in
    front makes the page's origin https on the same (already checked) Host.
    """
    if request.method in STATE_CHANGING:
        origin = _origin_of(request)
        if origin is None:
            if bearer_of(request.headers.get("Authorization")) is None:
                raise ApiError(
                    403,
                    "forbidden_origin",
                    "A state-changing request needs an Origin header or a bearer token.",
                )
        else:
            host = request.headers.get("Host", "").strip().lower()
            if origin not in (f"{request.scheme}://{host}", f"https://{host}"):
                raise ApiError(403, "forbidden_origin", "Cross-origin requests are refused.")
    return await handler(request)


@web.middleware
async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """401 unless the route is public or the caller has the bearer token or a login cookie."""
    state = request.app[ADMIN]
    if request.match_info.route.name in state.public_routes:
        return await handler(request)
    if not state.config.auth_configured:
        raise ApiError(
            401,
            "auth_not_configured",
            "The admin API is locked: set ADMIN_PASSWORD (browser login) or ADMIN_TOKEN "
            "(bearer token for scripts) and restart.",
        )
    principal = await state.auth.identify(
        request.headers.get("Authorization"), request.cookies.get(COOKIE_NAME)
    )
    if principal is None:
        raise ApiError(
            401,
            "unauthorized",
            "Log in or send the bearer token.",
            {"WWW-Authenticate": 'Bearer realm="playchat"'},
        )
    return await handler(request)


MIDDLEWARES = (
    connection_middleware,
    errors_middleware,
    forwarded_middleware,
    host_middleware,
    origin_middleware,
    auth_middleware,
)
