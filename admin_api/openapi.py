"""The OpenAPI 3.1 document, generated from the same route table that registers the routes."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from admin_api.routing import AnyRoute, Empty
from admin_api.schemas import ErrorOut
from admin_api.security import COOKIE_NAME

REF_TEMPLATE = "#/components/schemas/{model}"
_PATH_PARAM = re.compile(r"{(\w+)}")

Mode = Literal["validation", "serialization"]


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
    model: type[BaseModel],
    where: Literal["query", "path"],
    refs: Mapping[Any, dict[str, Any]],
    defs: dict[str, Any],
) -> list[dict[str, Any]]:
    if model is Empty:
        return []
    schema = defs[refs[(model, "validation")]["$ref"].rsplit("/", 1)[-1]]
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


def _responses(route: AnyRoute, refs: Mapping[Any, dict[str, Any]]) -> dict[str, Any]:
    if route.stream:
        # OpenAPI 3.1 reads an event stream's schema as the schema of one event.
        event = {
            "type": "object",
            "properties": {
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": refs[(route.response, "serialization")],
                },
                "event": {"type": "string"},
                "id": {"type": "string"},
                "retry": {"type": "integer"},
            },
            "required": ["data"],
        }
        ok: dict[str, Any] = {
            "description": route.response.__doc__ or "Server-sent events",
            "content": {"text/event-stream": {"schema": event}},
        }
    else:
        ok = {
            "description": route.response.__doc__ or "OK",
            "content": {"application/json": {"schema": refs[(route.response, "serialization")]}},
        }
    return {
        str(route.status): ok,
        "default": {
            "description": "Error",
            "content": {"application/json": {"schema": refs[(ErrorOut, "serialization")]}},
        },
    }


def build_openapi(
    routes: Sequence[AnyRoute], *, title: str = "PlayChat admin API", version: str = "1"
) -> dict[str, Any]:
    """The document for `routes`: paths, parameters, bodies, responses, security."""
    pairs: list[tuple[type[BaseModel], Mode]] = [(ErrorOut, "serialization")]
    for route in routes:
        pairs += [(route.params, "validation"), (route.query, "validation")]
        if route.takes_body:
            pairs.append((route.body, "validation"))
        pairs.append((route.response, "serialization"))
    unique = list(dict.fromkeys(pairs))
    refs, top = models_json_schema(unique, ref_template=REF_TEMPLATE)
    defs: dict[str, Any] = top.get("$defs", {})
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        operation: dict[str, Any] = {
            "operationId": route.name,
            "summary": route.summary,
            "tags": [route.tag],
            "parameters": _parameters(route.params, "path", refs, defs)
            + _parameters(route.query, "query", refs, defs),
            "responses": _responses(route, refs),
        }
        if route.takes_body:
            operation["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": refs[(route.body, "validation")]}},
            }
        if route.public:
            operation["security"] = []
        path_names = set(_PATH_PARAM.findall(route.path))
        declared = {p["name"] for p in operation["parameters"] if p["in"] == "path"}
        if path_names != declared:
            raise ValueError(f"{route.name}: path {route.path} vs params {sorted(declared)}")
        paths.setdefault(route.path, {})[route.method.lower()] = operation
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
