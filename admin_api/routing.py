"""The route table: each entry registers an endpoint and documents it (OpenAPI) at once.

An endpoint reads and validates its JSON body, query and path parameters with the route's
pydantic models, calls the view with them (`In`), and renders the view's response model as
JSON with the route's status. Bodies are read with the route's size limit.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from aiohttp import web
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from admin_api.context import CONTEXT, AdminContext
from admin_api.errors import ApiError

B = TypeVar("B", bound=BaseModel)
Q = TypeVar("Q", bound=BaseModel)
P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)

READ_CHUNK = 64 * 1024


class Empty(BaseModel):
    """No body, query or path parameters (unknown query parameters are ignored)."""


@dataclass(frozen=True)
class In(Generic[B, Q, P]):
    """A validated request: the raw request plus its parsed body, query and path models."""

    request: web.Request
    body: B
    query: Q
    path: P

    @property
    def ctx(self) -> AdminContext:
        """Everything the admin API was built over."""
        return self.request.app[CONTEXT]


@dataclass(frozen=True)
class Route(Generic[B, Q, P, R]):
    """One endpoint: how it is reached, what it takes and returns, and who may call it."""

    method: str
    path: str
    handler: Callable[[In[B, Q, P]], Awaitable[R | web.StreamResponse]]
    summary: str
    tag: str
    body: type[B]
    query: type[Q]
    params: type[P]
    response: type[R]
    status: int = 200
    public: bool = False
    stream: bool = False  # server-sent events; `response` describes each event's data
    large_body: bool = False  # allowed up to max_import_bytes instead of max_body_bytes

    @property
    def name(self) -> str:
        """The route's unique name and OpenAPI operationId."""
        return self.handler.__name__

    @property
    def takes_body(self) -> bool:
        """True when the route reads a JSON body."""
        return self.body is not Empty


AnyRoute = Route[Any, Any, Any, Any]


def render(model: BaseModel, status: int = 200) -> web.Response:
    """A response model as a JSON response."""
    return web.json_response(
        model.model_dump(mode="json"),
        status=status,
        dumps=lambda value: json.dumps(value, ensure_ascii=False),
    )


def _describe(exc: PydanticValidationError, where: str) -> str:
    # Only locations and messages: the offending input may be a secret and is never echoed.
    parts = []
    for error in exc.errors(include_input=False, include_url=False)[:10]:
        location = ".".join(str(part) for part in (where, *error["loc"]))
        parts.append(f"{location}: {error['msg']}")
    return "; ".join(parts)


def _validate(model: type[B], data: Any, where: str) -> B:
    try:
        return model.model_validate(data)
    except PydanticValidationError as exc:
        raise ApiError(422, "validation_error", _describe(exc, where)) from None


def _check_text(values: Mapping[str, str], where: str) -> None:
    for key, value in values.items():
        try:
            key.encode("utf-8")
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ApiError(400, "bad_request", f"The {where} is not valid UTF-8.") from None


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, refusing more than `limit` bytes without reading them all."""
    if request.content_length is not None and request.content_length > limit:
        raise ApiError(413, "too_large", f"The request body is larger than {limit} bytes.")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(READ_CHUNK):
        size += len(chunk)
        if size > limit:
            raise ApiError(413, "too_large", f"The request body is larger than {limit} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


async def _json_body(request: web.Request, limit: int) -> Any:
    raw = await read_body(request, limit)
    if not raw.strip():
        raise ApiError(400, "bad_request", "A JSON body is required.")
    try:
        data = json.loads(raw)
        # Lone surrogates decode from JSON escapes but cannot be stored as UTF-8.
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeError, RecursionError):
        raise ApiError(400, "bad_request", "The body is not valid UTF-8 JSON.") from None
    return data


def endpoint(route: AnyRoute) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler for a route."""

    async def handle(request: web.Request) -> web.StreamResponse:
        ctx = request.app[CONTEXT]
        _check_text(request.query, "query string")
        _check_text(request.match_info, "path")
        params = _validate(route.params, dict(request.match_info), "path")
        query = _validate(route.query, dict(request.query), "query")
        if route.takes_body:
            config = ctx.config
            limit = config.max_import_bytes if route.large_body else config.max_body_bytes
            body = _validate(route.body, await _json_body(request, limit), "body")
        else:
            body = Empty()
        result = await route.handler(In(request, body, query, params))
        if isinstance(result, web.StreamResponse):
            return result
        return render(result, route.status)

    handle.__name__ = route.name
    return handle


def register(app: web.Application, routes: list[AnyRoute]) -> None:
    """Add every route to the app's router, named after its handler."""
    names = [route.name for route in routes]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ValueError(f"duplicate route names: {sorted(duplicates)}")
    for route in routes:
        app.router.add_route(route.method, route.path, endpoint(route), name=route.name)
