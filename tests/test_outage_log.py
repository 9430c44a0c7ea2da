"""OutageLog: discord.py's reconnect tracebacks become one WARNING per outage and one INFO."""

from __future__ import annotations

import logging

import pytest

from bot.utils.outage_log import OutageLog


def _reconnect_failed(logger: logging.Logger) -> None:
    try:
        raise OSError("Cannot connect to host gateway.example:443")
    except OSError:
        logger.exception("Attempting a reconnect in %.2fs", 1.5)


def test_an_outage_is_one_warning_then_one_info_with_its_length(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    outage = OutageLog(loggers=("test.gateway",), clock=lambda: now[0])
    logger = logging.getLogger("test.gateway")
    caplog.set_level(logging.INFO)
    outage.install()
    try:
        logger.info("Shard ID None has connected to Gateway")  # untouched
        _reconnect_failed(logger)
        now[0] = 102.0
        _reconnect_failed(logger)  # the same outage: DEBUG, dropped at INFO
        assert outage.down
        now[0] = 103.4
        outage.recovered()
        outage.recovered()  # no outage any more: nothing
    finally:
        outage.uninstall()
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("INFO", "Shard ID None has connected to Gateway"),
        (
            "WARNING",
            "Discord connection lost (OSError: Cannot connect to host gateway.example:443); "
            "reconnecting",
        ),
        ("INFO", "Discord connection back after 3.4 s (2 failed reconnect attempts)"),
    ]
    assert all(r.exc_info is None for r in caplog.records)
    assert not outage.down


def test_at_debug_the_later_attempts_are_kept(caplog: pytest.LogCaptureFixture) -> None:
    outage = OutageLog(loggers=("test.gateway2",))
    logger = logging.getLogger("test.gateway2")
    caplog.set_level(logging.DEBUG)
    outage.install()
    try:
        _reconnect_failed(logger)
        _reconnect_failed(logger)
    finally:
        outage.uninstall()
    assert [r.levelname for r in caplog.records] == ["WARNING", "DEBUG"]
    assert "still unreachable" in caplog.records[1].getMessage()


def test_uninstalled_it_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    outage = OutageLog(loggers=("test.gateway3",))
    outage.install()
    outage.uninstall()
    _reconnect_failed(logging.getLogger("test.gateway3"))
    assert [r.levelname for r in caplog.records] == ["ERROR"]
