"""Logging for the entry points: one format, no library that logs secrets at DEBUG, DEBUG=true."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from pathlib import Path

from bot.utils.redact import Redactor

# Loggers whose DEBUG output includes SQL parameters or HTTP bodies (secrets, message bodies).
NOISY_LOGGERS = (
    "aiosqlite",
    "httpx",
    "httpcore",
    "LiteLLM",
    "LiteLLM Router",
    "LiteLLM Proxy",
    "litellm",
    "discord.http",
)
# INFO lines that say nothing an owner acts on: an HTTP request each (MCP health checks every
# 30 s), "Scheduler started", ddgs' per-engine failure text (the search tool warns once).
CHATTY_LOGGERS = ("httpx", "httpx2", "apscheduler", "ddgs", "primp")
# LiteLLM's verbose loggers (what litellm._turn_on_debug() raises to DEBUG).
LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm")
# What DEBUG=true opens up: LiteLLM, and the httpx/httpcore transport of the ollama client.
LLM_DEBUG_LOGGERS = (*LITELLM_LOGGERS, "httpx", "httpcore")


class RedactingFilter(logging.Filter):
    """Masks secrets in every record a handler writes (library DEBUG lines included)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self._redact = Redactor(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the record's message with its redacted text; never drops a record."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed call is reported by the handler, not raised here
            return True
        redacted = self._redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def set_llm_library_logging(debug: bool) -> None:
    """DEBUG for the LLM libraries' loggers when `debug`, else LiteLLM's kept at WARNING."""
    if debug:
        for name in LLM_DEBUG_LOGGERS:
            logging.getLogger(name).setLevel(logging.DEBUG)
        return
    for name in LITELLM_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def wants_library_debug(level: str, debug: bool) -> bool:
    """Whether the LLM libraries log at DEBUG: DEBUG=true, or LOG_LEVEL=DEBUG."""
    return debug or level.upper() == "DEBUG"


def adopt_litellm_logging(*, debug: bool | None = None) -> None:
    """After LiteLLM is imported: its records go through our handlers, never its own.

    LiteLLM adds a handler that writes records below WARNING to stdout, where the terminal
    chat writes only answers; without it they reach the root handler (stderr, our format,
    secrets masked). Its loggers stay at WARNING unless `debug` (or configure_logging) opened
    them; None keeps what configure_logging chose. Its import quiets httpx; `debug` reopens it.
    """
    module = sys.modules.get("litellm")
    if module is not None:
        # Its "Give Feedback / Get Help" lines are printed, not logged.
        setattr(module, "suppress_debug_info", True)  # noqa: B010 - unknown to the type checker
    for name in LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        for handler in logger.handlers[:]:
            if isinstance(handler, logging.StreamHandler):
                logger.removeHandler(handler)
        logger.propagate = True
        if debug is None and logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
    if debug is not None:
        set_llm_library_logging(debug)


def configure_logging(level: str, *, debug: bool = False, secrets: Iterable[str] = ()) -> None:
    """Log to stderr at `level` (DEBUG when `debug`); noisy loggers capped; secrets masked."""
    root = logging.getLogger()
    existing = list(root.handlers)
    logging.basicConfig(
        level=logging.DEBUG if debug else level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # basicConfig leaves the level alone when a handler exists already (e.g. under pytest).
    root.setLevel(logging.DEBUG if debug else level.upper())
    redacting = RedactingFilter(secrets)
    for handler in root.handlers:
        if handler not in existing:
            handler.addFilter(redacting)
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(max(logger.getEffectiveLevel(), logging.INFO))
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    set_llm_library_logging(wants_library_debug(level, debug))
    adopt_litellm_logging()


def log_to_file(path: Path) -> None:
    """Move the stderr handlers configure_logging added to the file `path` (appended).

    For the interactive terminal chat, whose terminal shows only the conversation: the file
    gets the same format, level and secret masking; Python warnings are logged there too.
    Raises OSError when the file cannot be created; logging is unchanged then.
    """
    root = logging.getLogger()
    to_stderr = [
        handler
        for handler in root.handlers
        if type(handler) is logging.StreamHandler and handler.stream is sys.stderr
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    file_handler = logging.FileHandler(path, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    for handler in to_stderr:
        file_handler.setFormatter(handler.formatter)
        for log_filter in handler.filters:
            file_handler.addFilter(log_filter)
        root.removeHandler(handler)
        handler.close()
    root.addHandler(file_handler)
    logging.captureWarnings(True)
