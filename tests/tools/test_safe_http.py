"""SafeFetcher against loopback servers: SSRF refusals, size caps, deadlines, hostile responses.

Two servers share one port: `internal` on 127.0.0.1 stands for everything private and must
never see a request or even a connection; `public` on 127.0.0.2 stands for the internet and is
reachable only through a test policy that allows exactly 127.0.0.2/32.
"""

from __future__ import annotations

import asyncio
import inspect
import ipaddress
import re
import socket
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from bot.tools.safe_http import (
    BlockedURLError,
    FetchError,
    FetchPolicy,
    SafeFetcher,
    TooLargeError,
    UnsupportedContentError,
    is_public_address,
    parse_host_literal,
)
from tests.fakes.web_server import FakeWebServer

MB = 1024 * 1024
TEST_POLICY = FetchPolicy.allowing("127.0.0.2/32")
PROXY_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


class ScriptedResolver(AbstractResolver):
    """A resolver whose n-th lookup of a name returns the n-th scripted answer (last repeats)."""

    def __init__(self, script: dict[str, list[list[str]]]) -> None:
        self.script = script
        self.lookups: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = self.script.get(host)
        if answers is None:
            raise OSError(f"no such test host {host}")
        count = self.lookups.count(host)
        self.lookups.append(host)
        ips = answers[min(count, len(answers) - 1)]
        return [
            ResolveResult(
                hostname=host,
                host=ip,
                port=port,
                family=socket.AF_INET6 if ":" in ip else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for ip in ips
        ]

    async def close(self) -> None:
        """Nothing to release."""


def assert_untouched(server: FakeWebServer) -> None:
    assert server.requests == []
    assert server.connections == 0


@pytest.fixture
async def internal() -> AsyncIterator[FakeWebServer]:
    async with FakeWebServer("127.0.0.1") as web:
        web.add_page("/secret", "internal secret")
        yield web


@pytest.fixture
async def public(internal: FakeWebServer) -> AsyncIterator[FakeWebServer]:
    # Same port as the internal server, so a URL differs only in the address it resolves to.
    async with FakeWebServer("127.0.0.2", internal.port) as web:
        web.add_page("/page", "public page")
        yield web


@pytest.fixture
async def strict() -> AsyncIterator[SafeFetcher]:
    async with SafeFetcher(FetchPolicy.strict(), timeout=5) as fetcher:
        yield fetcher


@pytest.fixture
async def fetcher() -> AsyncIterator[SafeFetcher]:
    async with SafeFetcher(TEST_POLICY, timeout=5) as fetcher:
        yield fetcher


# --- address rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("0x7f.0.0.0x1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("::ffff:7f00:1", "::ffff:7f00:1"),
        ("[::1]", "::1"),
        ("example.com", None),
        ("1.2.3.example", None),
    ],
)
def test_parse_host_literal_reads_every_spelling(host: str, expected: str | None) -> None:
    parsed = parse_host_literal(host)
    assert (None if parsed is None else str(parsed)) == expected


@pytest.mark.parametrize("host", ["1.2.3.4.5", "256.0.0.1", "08.0.0.1", "1.0x100.0.0", "example.1"])
def test_parse_host_literal_rejects_numeric_garbage(host: str) -> None:
    with pytest.raises(ValueError):
        parse_host_literal(host)


@pytest.mark.parametrize(
    "address",
    [
        "0.0.0.0",
        "10.1.2.3",
        "100.64.0.1",
        "100.100.100.200",
        "127.0.0.1",
        "127.255.255.254",
        "169.254.169.254",
        "172.16.0.1",
        "172.31.255.255",
        "192.0.0.192",
        "192.0.2.1",
        "192.168.0.1",
        "198.18.0.1",
        "198.51.100.1",
        "203.0.113.1",
        "224.0.0.1",
        "224.0.1.1",
        "233.252.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::",
        "::1",
        "::127.0.0.1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::7f00:1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::808:808",
        "2002:7f00:1::",
        "2002:a00:1::1",
        "2001:0:4136:e378:8000:63bf:80ff:fffe",
        "2001:db8::1",
        "3fff::1",
        "5f00::1",
        "fc00::1",
        "fd00:ec2::254",
        "fe80::1",
        "fec0::1",
        "ff02::1",
        "ff0e::1",
    ],
)
def test_non_public_addresses_are_denied(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert not is_public_address(ip)
    assert not FetchPolicy.strict().is_allowed(ip)


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "2606:4700:4700::1111",
        "::ffff:8.8.8.8",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ],
)
def test_public_addresses_and_their_wrapped_forms_are_allowed(address: str) -> None:
    assert is_public_address(ipaddress.ip_address(address))


def test_strict_policy_has_no_knobs() -> None:
    assert inspect.signature(FetchPolicy.strict).parameters == {}
    policy = FetchPolicy.strict()
    assert policy.allowed_networks == ()
    assert not policy.is_allowed(ipaddress.ip_address("127.0.0.2"))
    assert TEST_POLICY.is_allowed(ipaddress.ip_address("127.0.0.2"))
    assert not TEST_POLICY.is_allowed(ipaddress.ip_address("127.0.0.1"))


# --- SSRF: nothing reaches the internal server -----------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "0x7f.1",
        "0x7f000001",
        "127.1",
        "127.0.0.1.",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::]",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
        "0.0.0.0",
        "0",
        "[::]",
        "[::1]",
        "[fe80::1%25lo]",
        "169.254.169.254",
        "[fd00:ec2::254]",
        "10.0.0.1",
        "100.64.0.1",
        "localhost",
        "LOCALHOST.",
        "app.localhost",
        "1.2.3.4.5",
        "127.0.0.%31",
    ],
)
async def test_internal_literals_are_blocked_before_connecting(
    strict: SafeFetcher, internal: FakeWebServer, host: str
) -> None:
    url = f"http://{host}:{internal.port}/secret"
    with pytest.raises(BlockedURLError) as caught:
        await strict.fetch(url)
    message = str(caught.value)
    assert message.startswith("Blocked URL: ")
    assert "leads to" not in message  # refused by the pre-check, not at connect time
    assert_untouched(internal)


async def test_name_resolving_to_internal_is_refused_at_connect(internal: FakeWebServer) -> None:
    resolver = ScriptedResolver({"public.example": [["127.0.0.1"]]})
    async with SafeFetcher(FetchPolicy.strict(), timeout=5, resolver=resolver) as fetcher:
        with pytest.raises(BlockedURLError, match=r"non-public address: 127\.0\.0\.1"):
            await fetcher.fetch(f"http://public.example:{internal.port}/secret")
    assert resolver.lookups == ["public.example"]  # the URL passed the pre-check
    assert_untouched(internal)


async def test_dns_rebinding_second_answer_is_refused(
    internal: FakeWebServer, public: FakeWebServer
) -> None:
    resolver = ScriptedResolver({"rebind.example": [["127.0.0.2"], ["127.0.0.1"]]})
    url = f"http://rebind.example:{internal.port}/page"
    async with SafeFetcher(TEST_POLICY, timeout=5, resolver=resolver) as first:
        document = await first.fetch(url)
    assert document.body == b"public page"
    # A new connection resolves again; the name now points inside and the connect is refused.
    async with SafeFetcher(TEST_POLICY, timeout=5, resolver=resolver) as second:
        with pytest.raises(BlockedURLError, match="non-public address"):
            await second.fetch(url)
    assert resolver.lookups == ["rebind.example", "rebind.example"]
    assert [request.path for request in public.requests] == ["/page"]
    assert_untouched(internal)


async def test_mixed_answer_connects_only_to_the_allowed_address(
    internal: FakeWebServer, public: FakeWebServer
) -> None:
    resolver = ScriptedResolver({"mixed.example": [["127.0.0.1", "127.0.0.2"]]})
    async with SafeFetcher(TEST_POLICY, timeout=5, resolver=resolver) as fetcher:
        document = await fetcher.fetch(f"http://mixed.example:{internal.port}/page")
    assert document.body == b"public page"
    assert_untouched(internal)


async def test_concurrent_fetches_keep_their_refusals_apart(
    internal: FakeWebServer, public: FakeWebServer
) -> None:
    resolver = ScriptedResolver({"inside.example": [["127.0.0.1"]]})
    async with SafeFetcher(TEST_POLICY, timeout=5, resolver=resolver) as fetcher:
        results = await asyncio.gather(
            fetcher.fetch(f"http://inside.example:{internal.port}/secret"),
            fetcher.fetch(public.url_for("/page")),
            return_exceptions=True,
        )
    assert isinstance(results[0], BlockedURLError)
    assert not isinstance(results[1], BaseException)
    assert results[1].body == b"public page"
    assert_untouched(internal)


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:{port}/secret",
        "http://2130706433:{port}/secret",
        "http://[::ffff:127.0.0.1]:{port}/secret",
        "http://localhost:{port}/secret",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
async def test_redirect_to_internal_is_blocked(
    fetcher: SafeFetcher, internal: FakeWebServer, public: FakeWebServer, location: str
) -> None:
    public.add_redirect("/go", location.format(port=internal.port))
    with pytest.raises(BlockedURLError, match=r"^Blocked URL: .*redirect from"):
        await fetcher.fetch(public.url_for("/go"))
    assert [request.path for request in public.requests] == ["/go"]
    assert_untouched(internal)


async def test_redirect_to_a_name_resolving_inside_is_refused(
    internal: FakeWebServer, public: FakeWebServer
) -> None:
    resolver = ScriptedResolver({"intranet.example": [["127.0.0.1"]]})
    public.add_redirect("/go", f"http://intranet.example:{internal.port}/secret", status=307)
    async with SafeFetcher(TEST_POLICY, timeout=5, resolver=resolver) as fetcher:
        with pytest.raises(BlockedURLError, match="non-public address"):
            await fetcher.fetch(public.url_for("/go"))
    assert_untouched(internal)


@pytest.mark.parametrize(
    "location",
    [
        "ftp://127.0.0.2/file",
        "file:///etc/passwd",
        "gopher://127.0.0.1:70/_GET",
        "data:text/plain,hello",
        "javascript:alert(1)",
    ],
)
async def test_redirect_to_other_schemes_is_blocked(
    fetcher: SafeFetcher, internal: FakeWebServer, public: FakeWebServer, location: str
) -> None:
    public.add_redirect("/go", location)
    with pytest.raises(BlockedURLError, match="only http and https"):
        await fetcher.fetch(public.url_for("/go"))
    assert_untouched(internal)


async def test_six_redirects_are_followed(fetcher: SafeFetcher, public: FakeWebServer) -> None:
    start = public.add_redirect_chain("/r", 6, "/page")
    document = await fetcher.fetch(public.url_for(start))
    assert document.body == b"public page"
    assert document.url == public.url_for(start)
    assert document.final_url == public.url_for("/page")
    assert len(public.requests) == 7


async def test_a_seventh_redirect_is_refused(
    fetcher: SafeFetcher, internal: FakeWebServer, public: FakeWebServer
) -> None:
    start = public.add_redirect_chain("/r", 7, internal.url_for("/secret"))
    with pytest.raises(FetchError, match="Too many redirects") as caught:
        await fetcher.fetch(public.url_for(start))
    assert type(caught.value) is FetchError
    assert [request.path for request in public.requests] == [f"/r/{i}" for i in range(7)]
    assert_untouched(internal)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.2/file",
        "file:///etc/passwd",
        "gopher://127.0.0.2:70/_x",
        "data:text/html,<p>hi</p>",
        "ws://127.0.0.2/socket",
        "//127.0.0.2/page",
        "http:///page",
        "http://user:secret@127.0.0.2/page",
        "not a url",
        "",
        "http://" + "a" * 9000 + ".example/",
    ],
)
async def test_non_http_urls_are_blocked(
    fetcher: SafeFetcher, internal: FakeWebServer, public: FakeWebServer, url: str
) -> None:
    with pytest.raises(BlockedURLError, match=r"^Blocked URL: "):
        await fetcher.fetch(url)
    assert public.requests == []
    assert_untouched(internal)


async def test_proxy_variables_are_ignored(
    monkeypatch: pytest.MonkeyPatch, internal: FakeWebServer, public: FakeWebServer
) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.setenv(name, internal.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with SafeFetcher(TEST_POLICY, timeout=5) as fetcher:
        document = await fetcher.fetch(public.url_for("/page"))
    assert document.body == b"public page"
    assert [request.path for request in public.requests] == ["/page"]
    assert_untouched(internal)


# --- what an allowed fetch returns -----------------------------------------------------------


async def test_allowed_fetch_decodes_gzip_and_reads_the_charset(
    fetcher: SafeFetcher, public: FakeWebServer
) -> None:
    text = "<p>日本語のページです。</p>" * 200
    public.add_page("/ja", text, content_type='Text/HTML; Charset="Shift_JIS"', encoding="gzip")
    public.add_redirect("/old", "/ja", status=301)
    document = await fetcher.fetch(public.url_for("/old"), accept="text/html")
    assert document.status == 200
    assert document.content_type == "text/html"
    assert document.charset == "shift_jis"
    assert document.body.decode("shift_jis") == text
    assert document.url == public.url_for("/old")
    assert document.final_url == public.url_for("/ja")
    request = public.requests[-1]
    assert request.headers["Accept"] == "text/html"
    assert "gzip" in request.headers["Accept-Encoding"]
    assert request.headers["User-Agent"].startswith("PlayChat/")


async def test_missing_or_unknown_charset_is_none(
    fetcher: SafeFetcher, public: FakeWebServer
) -> None:
    public.add_page("/plain", b"plain", content_type="text/plain")
    public.add_page("/bogus", b"bogus", content_type="text/plain; charset=x-no-such-codec")
    public.add_page("/none", b"raw", content_type="")
    assert (await fetcher.fetch(public.url_for("/plain"))).charset is None
    assert (await fetcher.fetch(public.url_for("/bogus"))).charset is None
    assert (await fetcher.fetch(public.url_for("/none"))).content_type == (
        "application/octet-stream"
    )


@pytest.mark.parametrize(
    "content_type",
    ["image/png", "IMAGE/PNG", "video/mp4; codecs=x", "Audio/MPEG", "image/svg+xml; charset=utf-8"],
)
async def test_media_content_is_refused_before_the_body_is_read(
    public: FakeWebServer, content_type: str
) -> None:
    # The body never ends: reading any of it would run into the deadline instead.
    public.add_slow_drip("/media", interval=0.05, content_type=content_type)
    async with SafeFetcher(TEST_POLICY, timeout=2) as fetcher:
        started = time.monotonic()
        with pytest.raises(UnsupportedContentError, match="not supported"):
            await fetcher.fetch(public.url_for("/media"))
    assert time.monotonic() - started < 1.5


async def test_http_errors_are_fetch_errors(fetcher: SafeFetcher, public: FakeWebServer) -> None:
    public.add_page("/gone", "gone", status=410)
    url = public.url_for("/missing")
    with pytest.raises(FetchError) as caught:
        await fetcher.fetch(url)
    assert str(caught.value) == f"Failed to fetch {url}: HTTP 404"
    with pytest.raises(FetchError, match="HTTP 410"):
        await fetcher.fetch(public.url_for("/gone"))


async def test_connection_refused_is_a_fetch_error(fetcher: SafeFetcher) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.2", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FetchError, match="could not connect") as caught:
        await fetcher.fetch(f"http://127.0.0.2:{port}/")
    assert type(caught.value) is FetchError


async def test_closed_fetcher_refuses(public: FakeWebServer) -> None:
    fetcher = SafeFetcher(TEST_POLICY)
    await fetcher.close()
    with pytest.raises(FetchError, match="closed"):
        await fetcher.fetch(public.url_for("/page"))
    assert public.requests == []


# --- sizes, deadlines, hostile responses ------------------------------------------------------


async def test_declared_length_over_the_cap_is_refused_unread(
    fetcher: SafeFetcher, public: FakeWebServer
) -> None:
    # Claims 50 MB but sends 3 bytes: reading would fail as incomplete, not as too large.
    public.add_lying_length("/huge", claimed=50 * MB, actual=b"abc")
    with pytest.raises(TooLargeError, match="larger than 10 MB"):
        await fetcher.fetch(public.url_for("/huge"))


async def test_lying_content_length_never_yields_more(
    fetcher: SafeFetcher, public: FakeWebServer
) -> None:
    public.add_lying_length("/short-claim", claimed=10, actual=b"y" * (11 * MB))
    public.add_lying_length("/long-claim", claimed=1000, actual=b"abc")
    try:
        document = await fetcher.fetch(public.url_for("/short-claim"))
    except FetchError:
        pass
    else:
        assert len(document.body) <= 10
    with pytest.raises(FetchError, match="incomplete"):
        await fetcher.fetch(public.url_for("/long-claim"))


async def test_body_is_counted_while_streaming(public: FakeWebServer) -> None:
    public.add_oversized("/exact", 100_000)
    public.add_oversized("/over", 100_001)
    public.add_oversized("/over-declared", 100_001, declare_length=True)
    async with SafeFetcher(TEST_POLICY, timeout=5, max_bytes=100_000) as fetcher:
        assert len((await fetcher.fetch(public.url_for("/exact"))).body) == 100_000
        with pytest.raises(TooLargeError):
            await fetcher.fetch(public.url_for("/over"))
        with pytest.raises(TooLargeError):
            await fetcher.fetch(public.url_for("/over-declared"))


async def test_default_cap_is_ten_megabytes(fetcher: SafeFetcher, public: FakeWebServer) -> None:
    public.add_oversized("/ten", 10 * MB)
    public.add_oversized("/eleven", 11 * MB)
    assert len((await fetcher.fetch(public.url_for("/ten"))).body) == 10 * MB
    with pytest.raises(TooLargeError, match="larger than 10 MB"):
        await fetcher.fetch(public.url_for("/eleven"))


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * (4096)


def _peak_resident_bytes() -> int:
    with open("/proc/self/status") as status:
        match = re.search(r"VmHWM:\s+(\d+) kB", status.read())
    assert match is not None
    return int(match.group(1)) * 1024


async def _peak_rss_growth(work: Awaitable[Any]) -> tuple[int, BaseException | None]:
    """Peak RSS growth while `work` runs: kernel high-water mark, else sampled every 5 ms."""
    baseline = _resident_bytes()
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")  # resets VmHWM to the current RSS
        use_hwm = True
    except OSError:
        use_hwm = False
    peak = baseline
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _resident_bytes())
            await asyncio.sleep(0.005)  # sampling rate, not synchronisation

    sampler = asyncio.create_task(sample())
    error: BaseException | None = None
    try:
        await work
    except Exception as exc:
        error = exc
    finally:
        done.set()
        await sampler
    if use_hwm:
        peak = max(peak, _peak_resident_bytes())
    return peak - baseline, error


@pytest.mark.parametrize(("decoded_mb", "with_length"), [(1024, False), (64, True)])
async def test_gzip_bomb_stops_at_the_cap_with_bounded_memory(
    public: FakeWebServer, decoded_mb: int, with_length: bool
) -> None:
    public.add_gzip_bomb("/bomb", decoded_mb=decoded_mb, with_length=with_length)
    async with SafeFetcher(TEST_POLICY, timeout=20) as fetcher:
        started = time.monotonic()
        growth, error = await _peak_rss_growth(fetcher.fetch(public.url_for("/bomb")))
        elapsed = time.monotonic() - started
    assert isinstance(error, TooLargeError)
    assert growth < 100 * MB, f"RSS grew by {growth / MB:.0f} MB"
    assert elapsed < 10


async def test_slow_drip_stops_at_the_total_deadline(public: FakeWebServer) -> None:
    public.add_slow_drip("/drip", interval=0.05)
    async with SafeFetcher(TEST_POLICY, timeout=1.0) as fetcher:
        started = time.monotonic()
        with pytest.raises(FetchError, match=r"no complete response within 1 s") as caught:
            await fetcher.fetch(public.url_for("/drip"))
        elapsed = time.monotonic() - started
    assert type(caught.value) is FetchError
    assert 0.9 < elapsed < 1.6


async def test_deadline_covers_the_whole_redirect_chain(public: FakeWebServer) -> None:
    public.add_slow_drip("/drip", interval=0.05)
    start = public.add_redirect_chain("/r", 3, "/drip")
    async with SafeFetcher(TEST_POLICY, timeout=1.0) as fetcher:
        started = time.monotonic()
        with pytest.raises(FetchError, match="no complete response"):
            await fetcher.fetch(public.url_for(start))
    assert time.monotonic() - started < 1.6


@pytest.mark.parametrize(("size", "count"), [(100_000, 1), (20, 1000)])
async def test_huge_response_headers_are_refused(
    fetcher: SafeFetcher, public: FakeWebServer, size: int, count: int
) -> None:
    public.add_huge_headers("/headers", size, count=count)
    with pytest.raises(FetchError, match="headers that are too large") as caught:
        await fetcher.fetch(public.url_for("/headers"))
    assert type(caught.value) is FetchError
