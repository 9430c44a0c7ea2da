"""New topic channels take the host's time zone; how the host's zone is found."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.services import ServiceOptions, Services, open_services
from bot.topics.host_zone import host_timezone
from tests.conftest import LOCAL, SettingsFactory

CHANNEL = 4343


@pytest.fixture
async def opened(
    make_settings: SettingsFactory, service_options: ServiceOptions
) -> AsyncIterator[Services]:
    async with open_services(make_settings(), service_options) as services:
        yield services


async def test_a_newly_enabled_channel_gets_the_hosts_zone(
    opened: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "America/New_York")
    channel = await opened.topics.configure(CHANNEL, {"enabled": True})
    assert channel.timezone == "America/New_York"

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    again = await opened.topics.configure(CHANNEL, {"idle_minutes": 30})
    assert again.timezone == "America/New_York", "an existing channel keeps its zone"
    stored = await opened.repos.topics.get(LOCAL, CHANNEL)
    assert stored is not None and stored.timezone == "America/New_York"

    named = await opened.topics.configure(
        CHANNEL + 1, {"enabled": True, "timezone": "Europe/Paris"}
    )
    assert named.timezone == "Europe/Paris", "a zone given at creation wins"


async def test_running_a_topic_in_an_unconfigured_channel_also_uses_the_hosts_zone(
    opened: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", ":Australia/Sydney")
    await opened.topics.run_now(CHANNEL, space=LOCAL)
    stored = await opened.repos.topics.get(LOCAL, CHANNEL)
    assert stored is not None and stored.timezone == "Australia/Sydney"


def _etc(tmp_path: Path, timezone: str | None = None, link: str | None = None) -> Path:
    etc = tmp_path / "etc"
    etc.mkdir()
    if timezone is not None:
        (etc / "timezone").write_text(timezone + "\n", "utf-8")
    if link is not None:
        (etc / "localtime").symlink_to(link)
    return etc


@pytest.mark.parametrize(
    ("environ", "timezone", "link", "expected"),
    [
        ({"TZ": "Europe/Berlin"}, "Asia/Tokyo", None, "Europe/Berlin"),
        ({"TZ": ":/usr/share/zoneinfo/Europe/Rome"}, None, None, "Europe/Rome"),
        ({"TZ": "UTC0"}, "Asia/Tokyo", None, "Asia/Tokyo"),  # a POSIX rule, not a name
        ({}, "America/Chicago", "/usr/share/zoneinfo/Asia/Tokyo", "America/Chicago"),
        ({}, None, "/usr/share/zoneinfo/Asia/Tokyo", "Asia/Tokyo"),
        ({}, None, "/usr/share/zoneinfo/posix/Europe/Oslo", "Europe/Oslo"),
        ({"TZ": ""}, "Not/AZone", "/somewhere/else", "UTC"),
        ({}, None, None, "UTC"),
    ],
)
def test_the_hosts_zone_comes_from_tz_then_etc_timezone_then_localtime(
    tmp_path: Path,
    environ: dict[str, str],
    timezone: str | None,
    link: str | None,
    expected: str,
) -> None:
    etc = _etc(tmp_path, timezone, link)
    assert host_timezone(environ, etc) == expected
