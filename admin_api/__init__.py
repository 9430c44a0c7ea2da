"""Admin API: an aiohttp app over the same services as the bot."""

from admin_api.app import AdminServer, create_app, route_table, serve
from admin_api.config import AdminConfig, UnsafeBindError, check_bind, check_settings

__all__ = [
    "AdminConfig",
    "AdminServer",
    "UnsafeBindError",
    "check_bind",
    "check_settings",
    "create_app",
    "route_table",
    "serve",
]
