"""Logging for the entry points: one format, and no library that logs secrets at DEBUG."""

from __future__ import annotations

import logging
import sys

# Loggers whose DEBUG output includes SQL parameters or HTTP bodies (secrets, message bodies).
NOISY_LOGGERS = ("aiosqlite", "httpx", "httpcore", "LiteLLM", "litellm", "discord.http")
CHATTY_LOGGERS = ("httpx", "httpx2")


def configure_logging(level: str) -> None:
    """Log to stderr at `level`, with the noisy loggers capped at INFO."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.INFO))
    # One INFO line per HTTP request (MCP health checks every 30 s) is noise.
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
