"""The OpenAPI 3.1 document, generated from the same route table that registers the routes."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Hashable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode
from pydantic_core import core_schema

from admin_api.routing import PATH_PARAM, Route
from admin_api.schemas.common import ErrorOut
from admin_api.security import COOKIE_NAME

REF_TEMPLATE = "#/components/schemas/{model}"

Key = tuple[Hashable, JsonSchemaMode]


class ApiJsonSchema(GenerateJsonSchema):
    """Pydantic's schemas, except that a response lists every field as required.

    Responses are rendered with all their fields, defaults included, so a client may rely on
    each one being there.
    """

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        """Every rendered field in serialization mode; pydantic's rule for inputs."""
        if self.mode == "serialization":
            return field.get("serialization_exclude_if") is None
        return super().field_is_required(field, total)


def _param_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema without the null branch: an absent parameter is how None is sent."""
    schema = {key: value for key, value in schema.items() if key not in ("default", "title")}
    any_of = schema.pop("anyOf", None)
    if any_of is None:
        return schema
    branches = [branch for branch in any_of if branch != {"type": "null"}]
    if len(branches) == 1:
        return {**schema, **branches[0]}
    return {**schema, "anyOf": branches}


def _parameters(
    model: type[BaseModel] | None, where: Literal["query", "path"], defs: dict[str, Any]
) -> list[dict[str, Any]]:
    if model is None:
        return []
    schema = model.model_json_schema(ref_template=REF_TEMPLATE)
    defs.update(schema.pop("$defs", {}))
    required = set(schema.get("required", ()))
    params = []
    for name, prop in schema.get("properties", {}).items():
        param: dict[str, Any] = {
            "name": name,
            "in": where,
            "required": where == "path" or name in required,
            "schema": _param_schema(prop),
        }
        if "description" in prop:
            param["description"] = prop["description"]
        params.append(param)
    return params


def _doc(documented: Any, fallback: str) -> str:
    if isinstance(documented, type) and (
        issubclass(documented, BaseModel) or dataclasses.is_dataclass(documented)
    ):
        return documented.__doc__ or fallback
    return fallback


def _responses(route: Route, refs: dict[Key, Any]) -> dict[str, Any]:
    signature = route.signature
    if signature.stream is not None:
        # OpenAPI 3.1 reads an event stream's schema as the schema of one event.
        event = {
            "type": "object",
            "properties": {
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": REF_TEMPLATE.format(model=signature.stream.name)},
                },
                "event": {"type": "string"},
                "id": {"type": "string"},
                "retry": {"type": "integer"},
            },
            "required": ["data"],
        }
        ok: dict[str, Any] = {
            "description": signature.stream.description,
            "content": {"text/event-stream": {"schema": event}},
        }
    elif signature.download is not None:
        download = signature.download
        ok = {
            "description": download.description,
            "content": {
                download.media_type: {
                    "schema": {"type": "string", "contentMediaType": download.media_type}
                }
            },
        }
    else:
        ok = {
            "description": _doc(signature.response, "OK"),
            "content": {
                "application/json": {"schema": refs[(signature.response, "serialization")]}
            },
        }
    return {
        str(route.status): ok,
        "default": {
            "description": "Error",
            "content": {"application/json": {"schema": refs[(ErrorOut, "serialization")]}},
        },
    }


def _schemas(routes: Sequence[Route]) -> tuple[dict[Key, Any], dict[str, Any]]:
    """Every body and response schema (by type and mode) and the components they share."""
    adapters: dict[Key, TypeAdapter[Any]] = {(ErrorOut, "serialization"): TypeAdapter(ErrorOut)}
    for route in routes:
        body = route.signature.body
        if body is not None:
            adapters.setdefault((body.type, "validation"), body.adapter)
        if route.response_adapter is not None:
            key: Key = (route.signature.response, "serialization")
            adapters.setdefault(key, route.response_adapter)
    inputs = [(key, mode, adapter) for (key, mode), adapter in adapters.items()]
    refs, top = TypeAdapter.json_schemas(
        inputs, ref_template=REF_TEMPLATE, schema_generator=ApiJsonSchema
    )
    defs: dict[str, Any] = dict(top.get("$defs", {}))
    for route in routes:
        stream = route.signature.stream
        if stream is not None:
            defs[stream.name] = stream.schema()
    return dict(refs), defs


def _operation(route: Route, refs: dict[Key, Any], defs: dict[str, Any]) -> dict[str, Any]:
    signature = route.signature
    parameters = _parameters(signature.path, "path", defs) + _parameters(
        signature.query, "query", defs
    )
    if signature.query_model is not None:
        parameters += _parameters(signature.query_model[1], "query", defs)
    operation: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "tags": [route.tag],
        "parameters": parameters,
        "responses": _responses(route, refs),
    }
    if route.description:
        operation["description"] = route.description
    if signature.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": refs[(signature.body.type, "validation")]}},
        }
    if route.public:
        operation["security"] = []
    declared = {p["name"] for p in parameters if p["in"] == "path"}
    if set(PATH_PARAM.findall(route.path)) != declared:
        raise ValueError(f"{route.name}: path {route.path} vs params {sorted(declared)}")
    return operation


def build_openapi(
    routes: Sequence[Route], *, title: str = "PlayChat admin API", version: str = "1"
) -> dict[str, Any]:
    """The document for `routes`: paths, parameters, bodies, responses, security."""
    refs, defs = _schemas(routes)
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, refs, defs)
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": version},
        "paths": paths,
        "components": {
            "schemas": defs,
            "securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer"},
                "cookieAuth": {"type": "apiKey", "in": "cookie", "name": COOKIE_NAME},
            },
        },
        "security": [{"bearerAuth": []}, {"cookieAuth": []}],
    }


class OpenApiDocument:
    """The document for `routes`, built on its first request and kept.

    Building it (~0.15 s of pydantic schema work for every route) is not done at start-up: only
    a client reading /api/openapi.json needs it. It is built on a thread, so the event loop
    keeps serving meanwhile.
    """

    def __init__(self, routes: Sequence[Route]) -> None:
        self._routes = tuple(routes)
        self._document: dict[str, Any] | None = None
        self._lock = asyncio.Lock()

    @property
    def built(self) -> bool:
        """True once the document has been built."""
        return self._document is not None

    async def get(self) -> dict[str, Any]:
        """The document (built by the first caller; concurrent callers wait for it)."""
        async with self._lock:
            if self._document is None:
                self._document = await asyncio.to_thread(build_openapi, self._routes)
            return self._document
