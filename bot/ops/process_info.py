"""Facts about this process for the status screen: the package version and when it started."""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

log = logging.getLogger(__name__)

PACKAGE = "playchat"
# When this module was first imported: the start time where /proc cannot tell (not Linux).
IMPORTED_AT = datetime.now(UTC)


def version() -> str:
    """The installed PlayChat version ("unknown" when run from a tree that is not installed)."""
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


def process_started() -> datetime:
    """When this process started (from /proc on Linux; else when this module was imported)."""
    try:
        stat = Path("/proc/self/stat").read_text(encoding="ascii")
        # Field 22 (starttime, in clock ticks after boot); the name in (…) may hold spaces.
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text(encoding="ascii").splitlines()
            if line.startswith("btime ")
        )
        return datetime.fromtimestamp(boot + ticks / os.sysconf("SC_CLK_TCK"), UTC)
    except (OSError, ValueError, IndexError, StopIteration):
        log.debug("process start time not readable from /proc", exc_info=True)
        return IMPORTED_AT
