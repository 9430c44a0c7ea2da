"""Behind a TLS-terminating reverse proxy: forwarded scheme and address, from trusted peers only."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest
from pydantic import ValidationError

from admin_api.config import AdminConfig
from admin_api.forwarded import ClientView, Hop, parse_ip, resolve
from admin_api.security import COOKIE_NAME
from bot.config import Settings
from tests.admin_api.conftest import PASSWORD, Admin, StartAdmin

HTTPS_PROXY_HEADERS = [
    {"X-Forwarded-Proto": "https"},
    {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"},
    {"Forwarded": "for=203.0.113.9;proto=https"},
    {"Forwarded": 'for="[2001:db8::9]:4711";proto=HTTPS'},
]


def https_origin(admin: Admin) -> str:
    return admin.origin.replace("http://", "https://")


async def login(admin: Admin, password: str, headers: dict[str, str]) -> tuple[int, bool | None]:
    """Log in; the status and whether the cookie (if one was set) is marked Secure."""
    reply = await admin.post("/api/auth/login", {"password": password}, token=None, headers=headers)
    morsel = reply.cookies.get(COOKIE_NAME)
    return reply.status, None if morsel is None else bool(morsel["secure"])


@pytest.mark.parametrize("forwarded", HTTPS_PROXY_HEADERS)
async def test_cookie_is_secure_behind_a_trusted_tls_proxy(
    start_admin: StartAdmin, forwarded: dict[str, str]
) -> None:
    admin = await start_admin(admin_trusted_proxies="10.0.0.0/8, 127.0.0.1")
    headers = {"Origin": https_origin(admin), **forwarded}
    assert await login(admin, PASSWORD, headers) == (200, True)
    plain = {"Origin": admin.origin, "X-Forwarded-Proto": "http"}
    assert await login(admin, PASSWORD, plain) == (200, False), "the proxy said plain http"


@pytest.mark.parametrize("trusted", ["", "10.0.0.0/8", "::1"])
async def test_forwarded_headers_from_untrusted_peers_are_ignored(
    start_admin: StartAdmin, trusted: str
) -> None:
    admin = await start_admin(admin_trusted_proxies=trusted)
    for forwarded in HTTPS_PROXY_HEADERS:
        headers = {"Origin": admin.origin, **forwarded}
        assert await login(admin, PASSWORD, headers) == (200, False), forwarded
        https_page = {"Origin": https_origin(admin), **forwarded}
        assert await login(admin, PASSWORD, https_page) == (200, False), "https Origin allowed"


async def test_behind_a_trusted_proxy_the_throttle_counts_each_client(
    start_admin: StartAdmin,
) -> None:
    admin = await start_admin(admin_trusted_proxies="127.0.0.1")
    limit = admin.config.login_max_failures

    async def attempt(password: str, chain: str) -> int:
        headers = {"Origin": admin.origin, "X-Forwarded-For": chain}
        return (await login(admin, password, headers))[0]

    # The client's own (spoofed) entries are left of the address the proxy saw: rotating them
    # does not give a fresh budget.
    guesses = [attempt("bad", f"198.51.100.{n}, 203.0.113.1") for n in range(3 * limit)]
    statuses = await asyncio.gather(*guesses)
    assert statuses.count(401) == limit and statuses.count(429) == 2 * limit
    assert await attempt(PASSWORD, "203.0.113.1") == 429
    assert await attempt(PASSWORD, "203.0.113.2") == 200, "another client is not locked out"
    assert await attempt("bad", "203.0.113.2") == 401


async def test_without_trusted_proxies_forwarded_addresses_do_not_dodge_the_throttle(
    admin: Admin,
) -> None:
    limit = admin.config.login_max_failures
    guesses = [
        admin.post(
            "/api/auth/login",
            {"password": "bad"},
            token=None,
            headers={"Origin": admin.origin, "X-Forwarded-For": f"203.0.113.{n}"},
        )
        for n in range(3 * limit)
    ]
    statuses = [reply.status for reply in await asyncio.gather(*guesses)]
    assert statuses.count(401) == limit and statuses.count(429) == 2 * limit


PROXIES = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("fd00::/8"))


@pytest.mark.parametrize(
    ("peer", "hops", "expected"),
    [
        ("192.0.2.1", [Hop("203.0.113.5", "https")], ClientView("http", "192.0.2.1")),
        ("10.0.0.2", [Hop("203.0.113.5", "https")], ClientView("https", "203.0.113.5")),
        ("10.0.0.2", [], ClientView("http", "10.0.0.2")),
        ("10.0.0.2", [Hop(None, "https")], ClientView("https", "10.0.0.2")),
        ("10.0.0.2", [Hop("unknown", "https")], ClientView("https", "10.0.0.2")),
        ("10.0.0.2", [Hop("203.0.113.5", "gopher")], ClientView("http", "203.0.113.5")),
        (
            "10.0.0.2",
            [Hop("198.51.100.7", "http"), Hop("203.0.113.5", "https"), Hop("10.1.1.1", None)],
            ClientView("https", "203.0.113.5"),
        ),
        ("::ffff:10.0.0.2", [Hop("203.0.113.5:443", None)], ClientView("http", "203.0.113.5")),
        ("fd00::1", [Hop("[2001:db8::5]:80", "https")], ClientView("https", "2001:db8::5")),
        ("10.0.0.2", [Hop("::ffff:10.9.9.9", None)], ClientView("http", "10.9.9.9")),
    ],
)
def test_resolve_walks_the_hops_while_the_sender_is_trusted(
    peer: str, hops: list[Hop], expected: ClientView
) -> None:
    assert resolve("http", peer, hops, PROXIES) == expected


def test_a_tls_connection_stays_https_whatever_the_proxy_says() -> None:
    view = resolve("https", "10.0.0.2", [Hop("203.0.113.5", "http")], PROXIES)
    assert view == ClientView("https", "203.0.113.5")


def test_an_ipv4_address_is_never_inside_an_ipv6_network() -> None:
    everything_v6 = (ipaddress.ip_network("::/0"),)
    assert resolve("http", "192.0.2.1", [Hop("203.0.113.5", "https")], everything_v6) == (
        ClientView("http", "192.0.2.1")
    )


def test_parse_ip() -> None:
    assert str(parse_ip("[2001:db8::1]:4711")) == "2001:db8::1"
    assert str(parse_ip('"192.0.2.43:47011"')) == "192.0.2.43"
    assert str(parse_ip("2001:db8::1")) == "2001:db8::1"
    for junk in (None, "", "unknown", "_hidden", "[::1", "1.2.3.4.5", "example.com"):
        assert parse_ip(junk) is None, junk


def test_trusted_proxies_setting() -> None:
    settings = Settings(_env_file=None, admin_trusted_proxies="127.0.0.1, 10.0.0.0/8,::1")  # type: ignore[call-arg]
    assert settings.admin_trusted_proxies == ["127.0.0.1/32", "10.0.0.0/8", "::1/128"]
    config = AdminConfig.from_settings(settings)
    assert [str(network) for network in config.trusted_proxies] == settings.admin_trusted_proxies
    assert Settings(_env_file=None).admin_trusted_proxies == []  # type: ignore[call-arg]
    for bad in ("10.0.0.1/8", "proxy.example", "10.0.0.0/33"):
        with pytest.raises(ValidationError, match="not an IP address or CIDR network"):
            Settings(_env_file=None, admin_trusted_proxies=bad)  # type: ignore[call-arg]
