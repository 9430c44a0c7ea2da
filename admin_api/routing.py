"""The route table: one entry registers an endpoint and documents it (OpenAPI) at once.

What an endpoint takes and returns is read from its handler's signature, as tools are:

- a parameter typed `web.Request`, `Services` or `AdminState` is handed in;
- a parameter named in the path (`{id}`) is a path parameter;
- `body` is the JSON body (read with the route's size limit);
- `query`, typed with a pydantic model, takes that model's fields from the query string; any
  other parameter is one query parameter (its default makes it optional);
- the return annotation is the JSON response. A handler that builds its own response (cookies,
  headers, a stream) returns `Annotated[web.StreamResponse, <the documented type>]`,
  `Annotated[web.StreamResponse, EventStream(...)]` for server-sent events, or
  `Annotated[web.StreamResponse, FileDownload(...)]` for a file that is not JSON.

Everything is validated before the handler runs; a failure is a 422 naming where it was.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from aiohttp import web
from pydantic import BaseModel, TypeAdapter, create_model
from pydantic import ValidationError as PydanticValidationError

from admin_api.errors import ApiError
from admin_api.state import ADMIN, SERVICES, AdminState
from bot.services import Services

READ_CHUNK = 64 * 1024
PATH_PARAM = re.compile(r"{(\w+)}")

Handler = Callable[..., Awaitable[Any]]
Inject = Callable[[web.Request], Any]


@dataclass(frozen=True)
class EventStream:
    """A server-sent event response; `schema()` is the JSON schema of one event's `data`."""

    name: str
    description: str
    schema: Callable[[], dict[str, Any]]


@dataclass(frozen=True)
class FileDownload:
    """A response that is a file (not JSON): its media type and what it holds."""

    media_type: str
    description: str


@dataclass(frozen=True)
class BodySpec:
    """The parameter that takes the JSON body, its type and validator."""

    name: str
    type: Any
    adapter: TypeAdapter[Any]


def _request(request: web.Request) -> web.Request:
    return request


def _services(request: web.Request) -> Services:
    return request.app[SERVICES]


def _admin(request: web.Request) -> AdminState:
    return request.app[ADMIN]


def _injector(annotation: Any) -> Inject | None:
    if annotation is web.Request:
        return _request
    if annotation is Services:
        return _services
    if annotation is AdminState:
        return _admin
    return None


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_stream_response(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, web.StreamResponse)


def _params_model(name: str, params: Mapping[str, tuple[Any, Any]]) -> type[BaseModel] | None:
    if not params:
        return None
    return create_model(name, **params)  # type: ignore[call-overload,no-any-return]


@dataclass(frozen=True)
class Signature:
    """What a handler takes and returns, read from its annotations."""

    injected: tuple[tuple[str, Inject], ...]
    path: type[BaseModel] | None
    query: type[BaseModel] | None  # the single query parameters, as one model
    query_model: tuple[str, type[BaseModel]] | None  # a `query` parameter typed with a model
    body: BodySpec | None
    response: Any  # the documented JSON type; None for an event stream
    stream: EventStream | None
    raw: bool  # the handler returns its own web.StreamResponse
    download: FileDownload | None = None

    @classmethod
    def of(cls, handler: Handler, path: str) -> Signature:
        """Read `handler`'s parameters against `path`'s placeholders; TypeError when unclear."""
        where = f"{handler.__module__}.{handler.__name__}"
        hints = typing.get_type_hints(handler, include_extras=True)
        placeholders = set(PATH_PARAM.findall(path))
        injected: list[tuple[str, Inject]] = []
        path_params: dict[str, tuple[Any, Any]] = {}
        query_params: dict[str, tuple[Any, Any]] = {}
        query_model: tuple[str, type[BaseModel]] | None = None
        body: BodySpec | None = None
        for param in inspect.signature(handler).parameters.values():
            if param.name not in hints:
                raise TypeError(f"{where}: parameter {param.name!r} has no annotation")
            annotation = hints[param.name]
            default = ... if param.default is inspect.Parameter.empty else param.default
            inject = _injector(annotation)
            if inject is not None:
                injected.append((param.name, inject))
            elif param.name in placeholders:
                path_params[param.name] = (annotation, ...)
            elif param.name == "body":
                body = BodySpec(param.name, annotation, TypeAdapter(annotation))
            elif param.name == "query" and _is_model(annotation):
                query_model = (param.name, annotation)
            elif _is_model(annotation):
                raise TypeError(f"{where}: a model parameter must be `body` or `query`")
            else:
                query_params[param.name] = (annotation, default)
        if placeholders - set(path_params):
            missing = sorted(placeholders - set(path_params))
            raise TypeError(f"{where}: no parameter for path placeholder(s) {missing}")
        response, stream, raw = cls._returns(where, hints.get("return"))
        download = _download(hints.get("return"))
        name = "".join(part.title() for part in handler.__name__.split("_"))
        return cls(
            injected=tuple(injected),
            path=_params_model(f"{name}Path", path_params),
            query=_params_model(f"{name}Query", query_params),
            query_model=query_model,
            body=body,
            response=response,
            stream=stream,
            raw=raw,
            download=download,
        )

    @staticmethod
    def _returns(where: str, annotation: Any) -> tuple[Any, EventStream | None, bool]:
        if typing.get_origin(annotation) is Annotated:
            base, documented, *_ = typing.get_args(annotation)
            if _is_stream_response(base):
                if isinstance(documented, EventStream):
                    return None, documented, True
                if isinstance(documented, FileDownload):
                    return None, None, True
                return documented, None, True
        if annotation is None or _is_stream_response(annotation):
            raise TypeError(
                f"{where}: annotate the return with the JSON type it sends "
                "(Annotated[web.StreamResponse, T] when the handler builds the response)"
            )
        return annotation, None, False


def _download(annotation: Any) -> FileDownload | None:
    if typing.get_origin(annotation) is Annotated:
        documented = typing.get_args(annotation)[1]
        if isinstance(documented, FileDownload):
            return documented
    return None


@dataclass(frozen=True)
class Route:
    """One endpoint: how it is reached and who may call it; the rest comes from the handler.

    The summary is the first line of the handler's docstring and the tag its module's name,
    unless given.
    """

    method: str
    path: str
    handler: Handler
    status: int = 200
    public: bool = False
    large_body: bool = False  # allowed up to max_import_bytes instead of max_body_bytes
    summary: str = ""
    tag: str = ""
    signature: Signature = field(init=False, repr=False, compare=False)
    response_adapter: TypeAdapter[Any] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        signature = Signature.of(self.handler, self.path)
        adapter = None if signature.response is None else TypeAdapter(signature.response)
        object.__setattr__(self, "signature", signature)
        object.__setattr__(self, "response_adapter", adapter)
        if not self.summary:
            doc = inspect.getdoc(self.handler) or self.name
            object.__setattr__(self, "summary", doc.splitlines()[0].rstrip("."))
        if not self.tag:
            object.__setattr__(self, "tag", self.handler.__module__.rsplit(".", 1)[-1])

    @property
    def name(self) -> str:
        """The route's unique name and OpenAPI operationId."""
        return self.handler.__name__

    @property
    def description(self) -> str:
        """The handler's docstring after its first line."""
        doc = inspect.getdoc(self.handler) or ""
        return doc.partition("\n")[2].strip()

    @property
    def takes_body(self) -> bool:
        """True when the route reads a JSON body."""
        return self.signature.body is not None


def render(value: Any, status: int = 200, adapter: TypeAdapter[Any] | None = None) -> web.Response:
    """A value as a JSON response (through `adapter`, or one for the value's own type)."""
    if adapter is None and isinstance(value, BaseModel):
        data = value.model_dump(mode="json")
    else:
        data = (adapter or TypeAdapter(type(value))).dump_python(value, mode="json")
    return web.json_response(
        data, status=status, dumps=lambda data: json.dumps(data, ensure_ascii=False)
    )


def _describe(exc: PydanticValidationError, where: str) -> str:
    # Only locations and messages: the offending input may be a secret and is never echoed.
    parts = []
    for error in exc.errors(include_input=False, include_url=False)[:10]:
        location = ".".join(str(part) for part in (where, *error["loc"]))
        parts.append(f"{location}: {error['msg']}")
    return "; ".join(parts)


def _validate(adapter: TypeAdapter[Any] | type[BaseModel], data: Any, where: str) -> Any:
    try:
        if isinstance(adapter, TypeAdapter):
            return adapter.validate_python(data)
        return adapter.model_validate(data)
    except PydanticValidationError as exc:
        raise ApiError(422, "validation_error", _describe(exc, where)) from None


def _fields(parsed: BaseModel) -> dict[str, Any]:
    return {name: getattr(parsed, name) for name in type(parsed).model_fields}


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


async def _arguments(route: Route, request: web.Request) -> dict[str, Any]:
    signature = route.signature
    _check_text(request.query, "query string")
    _check_text(request.match_info, "path")
    args = {name: inject(request) for name, inject in signature.injected}
    if signature.path is not None:
        args |= _fields(_validate(signature.path, dict(request.match_info), "path"))
    if signature.query is not None:
        args |= _fields(_validate(signature.query, dict(request.query), "query"))
    if signature.query_model is not None:
        name, model = signature.query_model
        args[name] = _validate(model, dict(request.query), "query")
    if signature.body is not None:
        config = request.app[ADMIN].config
        limit = config.max_import_bytes if route.large_body else config.max_body_bytes
        data = await _json_body(request, limit)
        args[signature.body.name] = _validate(signature.body.adapter, data, "body")
    return args


def endpoint(route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler for a route."""

    async def handle(request: web.Request) -> web.StreamResponse:
        result = await route.handler(**await _arguments(route, request))
        if route.signature.raw:
            if not isinstance(result, web.StreamResponse):
                raise TypeError(f"{route.name} returned {type(result).__name__}, not a response")
            return result
        return render(result, route.status, route.response_adapter)

    handle.__name__ = route.name
    return handle


def register(app: web.Application, routes: list[Route]) -> None:
    """Add every route to the app's router, named after its handler."""
    names = [route.name for route in routes]
    duplicates = {name for name in names if names.count(name) > 1}
    if duplicates:
        raise ValueError(f"duplicate route names: {sorted(duplicates)}")
    for route in routes:
        app.router.add_route(route.method, route.path, endpoint(route), name=route.name)
