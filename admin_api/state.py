"""What the admin app keeps under its AppKeys: the shared `Services`, and admin-only state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from admin_api.config import AdminConfig
from admin_api.connections import ConnectionGuard
from admin_api.security import Authenticator, LoginThrottle
from admin_api.turns import ChatTurns
from bot.services import Services

if TYPE_CHECKING:
    from admin_api.openapi import OpenApiDocument


@dataclass(frozen=True)
class AdminState:
    """What only the admin API has: config, login machinery, chat turns, connections, routes."""

    config: AdminConfig
    auth: Authenticator
    throttle: LoginThrottle
    turns: ChatTurns
    connections: ConnectionGuard
    openapi: OpenApiDocument  # built on its first request
    public_routes: frozenset[str] = frozenset()


SERVICES = web.AppKey("services", Services)
ADMIN = web.AppKey("admin", AdminState)
