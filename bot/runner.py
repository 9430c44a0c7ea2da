"""Runs the long-lived front ends (Discord client, admin API, scheduler) in one event loop."""

from __future__ import annotations

import logging

from bot.services import Services

log = logging.getLogger(__name__)


async def run_discord(services: Services) -> int:
    """Run the Discord client until it is closed or a signal arrives."""
    raise NotImplementedError("the Discord front end lands with issue 3")
