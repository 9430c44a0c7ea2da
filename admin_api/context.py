"""What every view can reach: the services, optional extras, config and admin-only stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from admin_api.config import AdminConfig
from admin_api.deps import AdminDeps
from admin_api.security import Authenticator, LoginThrottle
from admin_api.turns import ChatTurns
from bot.services import Services
from bot.store.model_presets import ModelPresetRepository
from bot.store.stats import StatsRepository
from bot.store.transfer import SessionTransfer


@dataclass(frozen=True)
class AdminContext:
    """The admin app's state, stored on the app under CONTEXT."""

    services: Services
    deps: AdminDeps
    config: AdminConfig
    auth: Authenticator
    throttle: LoginThrottle
    presets: ModelPresetRepository
    stats: StatsRepository
    transfer: SessionTransfer
    turns: ChatTurns
    public_routes: frozenset[str] = frozenset()
    openapi: dict[str, Any] = field(default_factory=dict)


CONTEXT = web.AppKey("admin_context", AdminContext)
