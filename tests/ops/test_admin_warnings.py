"""The start-up warnings about an admin API nobody can log in to, or one open to the network."""

from __future__ import annotations

from typing import Any

from admin_api.config import start_warnings
from bot.config import Settings


def _settings(**values: Any) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_no_password_and_no_token_is_locked() -> None:
    (warning,) = start_warnings(_settings())
    assert "locked" in warning and "nobody can log in" in warning
    assert "ADMIN_PASSWORD" in warning and "ADMIN_TOKEN" in warning
    assert "127.0.0.1:8765" in warning


def test_a_password_or_a_token_on_loopback_warns_nothing() -> None:
    assert start_warnings(_settings(admin_password="pw")) == []
    assert start_warnings(_settings(admin_token="t" * 20)) == []
    assert start_warnings(_settings(admin_enabled=False)) == []


def test_every_interface_warns_even_behind_a_proxy() -> None:
    for proxies in ([], ["127.0.0.1"]):
        settings = _settings(
            admin_password="pw", admin_host="0.0.0.0", admin_trusted_proxies=proxies
        )
        (warning,) = start_warnings(settings)
        assert "every network interface" in warning and "ADMIN_HOST" in warning


def test_a_public_address_without_a_proxy_warns_and_with_one_does_not() -> None:
    (warning,) = start_warnings(_settings(admin_password="pw", admin_host="192.0.2.10"))
    assert "192.0.2.10:8765" in warning and "ADMIN_TRUSTED_PROXIES" in warning
    behind = _settings(
        admin_password="pw", admin_host="192.0.2.10", admin_trusted_proxies=["192.0.2.1"]
    )
    assert start_warnings(behind) == []
