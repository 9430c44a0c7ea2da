"""The host's time zone as an IANA name, without extra dependencies."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from bot.utils.zones import zone_or_none

log = logging.getLogger(__name__)

FALLBACK_ZONE = "UTC"
ETC = Path("/etc")
# Variants of the tz database some systems link /etc/localtime into; the name follows them.
_VARIANT_DIRS = ("posix/", "right/")


def _name_in_path(path: str) -> str:
    """'…/zoneinfo/Europe/Paris' → 'Europe/Paris' ('' when the path is not under zoneinfo)."""
    _, found, name = path.partition("zoneinfo/")
    if not found:
        return ""
    for variant in _VARIANT_DIRS:
        name = name.removeprefix(variant)
    return name


def _etc_timezone(etc: Path) -> str:
    try:
        lines = (etc / "timezone").read_text("utf-8").strip().splitlines()
    except (OSError, UnicodeError):
        return ""
    return lines[0].strip() if lines else ""


def _localtime_link(etc: Path) -> str:
    try:
        # The link's own text names the zone the admin chose (its target may be an alias).
        return _name_in_path(os.readlink(etc / "localtime"))
    except OSError:  # missing, or a copy rather than a link
        return ""


def _candidates(environ: Mapping[str, str], etc: Path) -> list[str]:
    tz = environ.get("TZ", "").strip().removeprefix(":")
    return [
        _name_in_path(tz) if tz.startswith("/") else tz,
        _etc_timezone(etc),
        _localtime_link(etc),
    ]


def _known(name: str) -> bool:
    return zone_or_none(name) is not None


def host_timezone(environ: Mapping[str, str] | None = None, etc: Path = ETC) -> str:
    """The host's time zone: `TZ`, else /etc/timezone, else the /etc/localtime link, else UTC.

    Only names the tz database knows are returned (a POSIX rule such as `UTC0` is skipped).
    """
    for name in _candidates(os.environ if environ is None else environ, etc):
        if _known(name):
            return name
    log.debug("host time zone unknown; using %s", FALLBACK_ZONE)
    return FALLBACK_ZONE
