"""A route is declared once: its parameters, body and response come from the handler signature."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import aiohttp
import pytest
from aiohttp import web
from pydantic import BaseModel, Field

from admin_api import create_app
from admin_api.openapi import build_openapi
from admin_api.routing import Route, register
from admin_api.schemas.common import Body, Page, PageQuery, RowId
from bot.services import Services
from bot.store.transfer import SQLITE_INT_MAX
from tests.admin_api.conftest import TOKEN, Admin


class ToyIn(Body):
    """A toy's new name and size."""

    name: Annotated[str, Field(min_length=1, max_length=10)]
    size: int = 1


@dataclass(frozen=True)
class Toy:
    """A toy as stored."""

    id: int
    name: str
    size: int
    owner: str | None = None


async def update_toy(services: Services, id: RowId, body: ToyIn, dry_run: bool = False) -> Toy:
    """Change a toy.

    Nothing is stored with dry_run.
    """
    assert isinstance(services, Services)
    return Toy(id, body.name, body.size, None if dry_run else "me")


async def list_toys(
    query: PageQuery, colour: Literal["red", "blue"] | None = None
) -> Page[Toy, int]:
    """List toys."""
    toys = [Toy(n, colour or "any", n) for n in range(1, query.limit + 1)]
    return Page.of(toys, query.limit, toys[-1].id)


def toy_routes() -> list[Route]:
    return [
        Route("PUT", "/api/toys/{id}", update_toy),
        Route("GET", "/api/toys", list_toys),
    ]


def test_the_document_is_read_from_the_signatures() -> None:
    spec = build_openapi(toy_routes())
    schemas = spec["components"]["schemas"]
    put = spec["paths"]["/api/toys/{id}"]["put"]
    assert (put["operationId"], put["summary"], put["tags"]) == (
        "update_toy",
        "Change a toy",
        ["test_routing"],
    )
    assert put["description"] == "Nothing is stored with dry_run."
    assert put["parameters"] == [
        {
            "name": "id",
            "in": "path",
            "required": True,
            "schema": {"type": "integer", "minimum": 1, "maximum": SQLITE_INT_MAX},
        },
        {"name": "dry_run", "in": "query", "required": False, "schema": {"type": "boolean"}},
    ]
    body = put["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/ToyIn"}
    assert schemas["ToyIn"]["required"] == ["name"]
    assert schemas["ToyIn"]["additionalProperties"] is False
    ok = put["responses"]["200"]
    assert ok["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Toy"}
    assert ok["description"] == "A toy as stored."
    assert schemas["Toy"]["required"] == ["id", "name", "size", "owner"], "responses carry all"

    listing = spec["paths"]["/api/toys"]["get"]
    assert "requestBody" not in listing
    assert [(p["name"], p["in"], p["required"]) for p in listing["parameters"]] == [
        ("colour", "query", False),
        ("limit", "query", False),
        ("cursor", "query", False),
    ]
    assert listing["parameters"][0]["schema"] == {"enum": ["red", "blue"], "type": "string"}
    page = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    page_schema = schemas[page.rsplit("/", 1)[-1]]
    assert page_schema["properties"]["items"]["items"] == {"$ref": "#/components/schemas/Toy"}


@pytest.fixture
async def toy_url(admin: Admin) -> AsyncIterator[str]:
    """The real admin app (middlewares, auth) with the toy routes added, on a real socket."""
    app = create_app(admin.services, config=admin.config)
    register(app, toy_routes())
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


async def call(
    url: str, method: str, path: str, body: Any = None, **params: str
) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url + path, json=body, params=params, headers=headers) as response,
    ):
        return response.status, await response.json()


async def test_requests_are_validated_against_the_signature(toy_url: str) -> None:
    assert await call(toy_url, "PUT", "/api/toys/5", {"name": "car"}) == (
        200,
        {"id": 5, "name": "car", "size": 1, "owner": "me"},
    )
    status, toy = await call(toy_url, "PUT", "/api/toys/5", {"name": "car"}, dry_run="true")
    assert (status, toy["owner"]) == (200, None)

    for path, body, params, where in (
        ("/api/toys/5", {"name": ""}, {}, "body.name"),
        ("/api/toys/5", {"name": "car", "colour": "red"}, {}, "body.colour"),
        ("/api/toys/5", {"size": 2}, {}, "body.name"),
        ("/api/toys/0", {"name": "car"}, {}, "path.id"),
        ("/api/toys/5", {"name": "car"}, {"dry_run": "perhaps"}, "query.dry_run"),
    ):
        status, error = await call(toy_url, "PUT", path, body, **params)
        assert (status, error["error"]) == (422, "validation_error"), (path, body, params)
        assert error["detail"].startswith(where), error

    status, page = await call(toy_url, "GET", "/api/toys", limit="2", colour="red")
    assert status == 200
    assert page == {
        "items": [
            {"id": 1, "name": "red", "size": 1, "owner": None},
            {"id": 2, "name": "red", "size": 2, "owner": None},
        ],
        "next_cursor": 2,
    }
    status, error = await call(toy_url, "GET", "/api/toys", colour="green")
    assert (status, error["detail"].split(":")[0]) == (422, "query.colour")
    status, error = await call(toy_url, "GET", "/api/toys", limit="0")
    assert (status, error["detail"].split(":")[0]) == (422, "query.limit")


class Other(BaseModel):
    """A second model."""

    x: int


async def missing_path_param(id: int) -> Toy:
    """No {name} parameter."""
    raise AssertionError


async def stray_model(services: Services, other: Other) -> Toy:
    """A model that is neither body nor query."""
    raise AssertionError


async def bare_response(request: web.Request) -> web.StreamResponse:
    """A response whose JSON is not documented."""
    raise AssertionError


async def unannotated(services: Services, thing) -> Toy:  # type: ignore[no-untyped-def]
    """A parameter without a type."""
    raise AssertionError


@pytest.mark.parametrize(
    ("path", "handler", "message"),
    [
        ("/api/toys/{id}/{name}", missing_path_param, "path placeholder"),
        ("/api/toys", stray_model, "`body` or `query`"),
        ("/api/toys", bare_response, "Annotated[web.StreamResponse, T]"),
        ("/api/toys", unannotated, "no annotation"),
    ],
)
def test_an_unclear_signature_is_refused_at_declaration(
    path: str, handler: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Route("GET", path, handler)
