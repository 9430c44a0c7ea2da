"""The admin API on a real socket (127.0.0.1, port 0) over real services and the loopback LLM."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import jsonschema
import pytest

from admin_api import AdminConfig, AdminServer, serve
from admin_api.schemas.chat import chat_event_schema
from bot.services import ServiceOptions, Services, open_services
from tests.conftest import SettingsFactory
from tests.fakes.llm_server import FakeLLMServer

PASSWORD = "correct horse battery staple"
TOKEN = "admin-token-0123456789abcdefXYZ"
API_KEY = "sk-live-SECRETVALUE-9f8e7d6c5b4a"


class FakeClock:
    """A settable wall clock (seconds since the epoch)."""

    def __init__(self, start: float = 1_900_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Reply:
    """A response as the tests look at it."""

    status: int
    headers: dict[str, str]
    text: str
    cookies: dict[str, Any] = field(default_factory=dict)

    @property
    def json(self) -> Any:
        return json.loads(self.text)


@dataclass
class Admin:
    """A running admin API plus a client and the services behind it."""

    server: AdminServer
    services: Services
    config: AdminConfig
    clock: FakeClock
    llm: FakeLLMServer
    http: aiohttp.ClientSession
    seen: list[Reply] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def origin(self) -> str:
        return self.server.url

    async def call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        data: bytes | None = None,
        token: str | None = TOKEN,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
    ) -> Reply:
        """One request; bearer token by default (pass token=None for none)."""
        sent = dict(headers or {})
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token}")
        async with self.http.request(
            method, self.url + path, json=json_body, data=data, headers=sent, params=params
        ) as response:
            reply = Reply(
                response.status,
                dict(response.headers),
                await response.text(),
                {name: morsel for name, morsel in response.cookies.items()},
            )
        self.seen.append(reply)
        return reply

    async def get(self, path: str, **kwargs: Any) -> Reply:
        return await self.call("GET", path, **kwargs)

    async def post(self, path: str, json_body: Any = None, **kwargs: Any) -> Reply:
        return await self.call("POST", path, json_body=json_body, **kwargs)

    async def put(self, path: str, json_body: Any = None, **kwargs: Any) -> Reply:
        return await self.call("PUT", path, json_body=json_body, **kwargs)

    async def patch(self, path: str, json_body: Any = None, **kwargs: Any) -> Reply:
        return await self.call("PATCH", path, json_body=json_body, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> Reply:
        return await self.call("DELETE", path, **kwargs)


StartAdmin = Callable[..., Awaitable[Admin]]


@contextlib.asynccontextmanager
async def admin_starter(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> AsyncIterator[StartAdmin]:
    """start(backend, config_changes=..., **setting_overrides) for a block; all closed at exit."""
    opened: list[tuple[Any, AdminServer, aiohttp.ClientSession]] = []

    async def start(
        backend: str = "ollama",
        *,
        config_changes: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> Admin:
        values: dict[str, Any] = {"admin_password": PASSWORD, "admin_token": TOKEN}
        values.update(overrides)
        settings = make_settings(backend, **values)
        context = open_services(settings, service_options)
        services = await context.__aenter__()
        clock = FakeClock()
        config = dataclasses.replace(
            AdminConfig.from_settings(settings, clock=clock),
            host="127.0.0.1",
            port=0,
            **(config_changes or {}),
        )
        server = await serve(services, config=config)
        http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        opened.append((context, server, http))
        return Admin(server, services, config, clock, llm, http)

    try:
        yield start
    finally:
        for context, server, http in reversed(opened):
            await http.close()
            await server.close()
            await context.__aexit__(None, None, None)


@pytest.fixture
async def start_admin(
    make_settings: SettingsFactory,
    service_options: ServiceOptions,
    llm: FakeLLMServer,
) -> AsyncIterator[StartAdmin]:
    """Start admin APIs: start_admin(backend, config_changes=..., **setting_overrides)."""
    async with admin_starter(make_settings, service_options, llm) as start:
        yield start


@pytest.fixture
async def admin(start_admin: StartAdmin) -> Admin:
    """An admin API with a password and a token, Ollama backend."""
    return await start_admin()


def sse_events(text: str) -> list[dict[str, Any]]:
    """The JSON payloads of a server-sent event stream, each checked against the documented
    event schema."""
    validator = jsonschema.Draft202012Validator(chat_event_schema())
    events = []
    for frame in text.split("\n\n"):
        if frame.strip():
            assert frame.startswith("data: "), frame
            payload = json.loads(frame[len("data: ") :])
            validator.validate(payload)
            events.append(payload)
    return events
