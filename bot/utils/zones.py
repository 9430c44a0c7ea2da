"""Time zones by IANA name: one lookup, one rule for names the host does not know."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def zone(name: str) -> ZoneInfo:
    """The time zone called `name`; raises ValueError when the host does not know it."""
    if not name or name.startswith("/"):
        raise ValueError(f"unknown time zone {name!r}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(f"unknown time zone {name!r}") from exc


def zone_or_none(name: str | None) -> ZoneInfo | None:
    """The time zone called `name`, or None when `name` is empty or unknown to the host."""
    try:
        return zone(name) if name else None
    except ValueError:
        return None
