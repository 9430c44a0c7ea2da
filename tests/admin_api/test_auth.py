"""Authentication, login sessions, throttling, Host/Origin checks and the bind-safety rule."""

from __future__ import annotations

import asyncio
import hashlib
import re

import pytest

from admin_api import AdminConfig, UnsafeBindError, check_bind, route_table, serve
from admin_api.__main__ import main as admin_main
from admin_api.security import COOKIE_NAME, LoginThrottle, LoginThrottled
from tests.admin_api.conftest import PASSWORD, TOKEN, Admin, FakeClock, StartAdmin

PUBLIC = {"/health", "/api/auth/login"}


def concrete(path: str) -> str:
    return re.sub(r"{session_id}", "abc123", re.sub(r"{id}", "1", path))


async def test_every_route_but_health_and_login_refuses_without_auth(admin: Admin) -> None:
    routes = route_table()
    assert len(routes) >= 40
    spec = (await admin.get("/api/openapi.json")).json
    documented = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    assert documented == {(r.method, r.path) for r in routes}, "the document is the route table"
    same_origin = {"Origin": admin.origin}
    for route in routes:
        path = concrete(route.path)
        body = {} if route.takes_body else None
        for token in (None, "wrong-token-wrong-token"):
            reply = await admin.call(
                route.method, path, json_body=body, token=token, headers=same_origin
            )
            if route.path in PUBLIC:
                assert reply.status != 401, (route.method, path)
            else:
                assert reply.status == 401, (route.method, path, reply.status)
                assert reply.json["error"] == "unauthorized"
    unknown = await admin.get("/api/nothing-here", token=None)
    assert unknown.status == 401, "no probing of paths without credentials"
    assert (await admin.get("/api/nothing-here")).status == 404
    assert (await admin.get("/health", token=None)).json == {"status": "ok"}
    page = await admin.get("/", token=None)
    assert page.status == 200 and "admin" in page.text.lower(), "the login page is public"
    asset = await admin.get("/static/index.html", token=None)
    assert asset.status == 200, "so are its static assets"


async def test_login_cookie_logout_and_expiry(admin: Admin) -> None:
    same_origin = {"Origin": admin.origin}
    wrong = await admin.post(
        "/api/auth/login", {"password": "nope"}, token=None, headers=same_origin
    )
    assert wrong.status == 401 and wrong.json["error"] == "wrong_password"
    assert COOKIE_NAME not in wrong.cookies

    ok = await admin.post(
        "/api/auth/login", {"password": PASSWORD}, token=None, headers=same_origin
    )
    assert ok.status == 200
    morsel = ok.cookies[COOKIE_NAME]
    assert morsel["httponly"] is True
    assert morsel["samesite"] == "Strict"
    assert int(morsel["max-age"]) == admin.config.session_max_age
    assert not morsel["secure"], "plain http on loopback"
    stored = await admin.services.db.fetchall("SELECT token_hash FROM admin_sessions")
    assert [row[0] for row in stored] == [hashlib.sha256(morsel.value.encode()).hexdigest()]

    who = await admin.get("/api/auth/session", token=None)
    assert who.status == 200 and who.json == {"method": "cookie"}
    assert (await admin.get("/api/auth/session")).json == {"method": "token"}

    # A cookie alone (no Origin) may not change state; with the page's Origin it may.
    assert (
        await admin.post("/api/models/presets", {"label": "A", "value": "a"}, token=None)
    ).status == 403
    created = await admin.post(
        "/api/models/presets", {"label": "A", "value": "a"}, token=None, headers=same_origin
    )
    assert created.status == 201

    admin.clock.advance(admin.config.session_max_age + 1)
    expired = await admin.get("/api/auth/session", token=None)
    assert expired.status == 401
    admin.clock.advance(-(admin.config.session_max_age + 1))
    assert (await admin.get("/api/auth/session", token=None)).status == 200

    out = await admin.post("/api/auth/logout", token=None, headers=same_origin)
    assert out.status == 200
    assert await admin.services.db.fetchall("SELECT token_hash FROM admin_sessions") == []
    admin.http.cookie_jar.update_cookies({COOKIE_NAME: morsel.value})
    assert (await admin.get("/api/auth/session", token=None)).status == 401, "cookie is dead"


async def test_login_session_survives_a_restart(start_admin: StartAdmin) -> None:
    first = await start_admin()
    ok = await first.post(
        "/api/auth/login", {"password": PASSWORD}, token=None, headers={"Origin": first.origin}
    )
    cookie = ok.cookies[COOKIE_NAME].value
    await first.server.close()
    second_server = await serve(first.services, config=first.config)
    try:
        async with first.http.get(
            second_server.url + "/api/auth/session", cookies={COOKIE_NAME: cookie}
        ) as response:
            assert response.status == 200
    finally:
        await second_server.close()


async def test_sixth_bad_login_in_a_minute_is_throttled(admin: Admin) -> None:
    same_origin = {"Origin": admin.origin}

    async def login(password: str) -> int:
        reply = await admin.post(
            "/api/auth/login", {"password": password}, token=None, headers=same_origin
        )
        if reply.status == 429:
            assert 1 <= int(reply.headers["Retry-After"]) <= 60
            assert reply.json["error"] == "too_many_attempts"
        return reply.status

    for second in range(5):
        assert await login(f"bad-{second}") == 401
        admin.clock.advance(10)
    assert await login("bad-6") == 429
    assert await login(PASSWORD) == 429, "even the right password waits"
    admin.clock.advance(11)  # the first failure is now more than a minute old
    assert await login(PASSWORD) == 200
    assert await login("bad-7") == 401
    assert await login("bad-8") == 429


async def test_parallel_wrong_logins_cannot_beat_the_throttle(admin: Admin) -> None:
    same_origin = {"Origin": admin.origin}
    limit = admin.config.login_max_failures

    async def login(password: str) -> int:
        reply = await admin.post(
            "/api/auth/login", {"password": password}, token=None, headers=same_origin
        )
        return reply.status

    statuses = await asyncio.gather(*(login(f"bad-{n}") for n in range(30)))
    assert statuses.count(401) == limit, statuses
    assert statuses.count(429) == 30 - limit, "every guess over the limit is refused unchecked"
    assert await login(PASSWORD) == 429, "the right password waits out the window too"
    admin.clock.advance(admin.config.login_window - 1)
    assert await login(PASSWORD) == 429
    admin.clock.advance(1)
    assert await login(PASSWORD) == 200


async def test_a_parallel_success_gives_its_attempt_back(admin: Admin) -> None:
    same_origin = {"Origin": admin.origin}

    async def login(password: str) -> int:
        reply = await admin.post(
            "/api/auth/login", {"password": password}, token=None, headers=same_origin
        )
        return reply.status

    limit = admin.config.login_max_failures
    wrong = [login(f"bad-{n}") for n in range(limit - 1)]
    statuses = await asyncio.gather(*wrong, login(PASSWORD))
    assert sorted(statuses) == [200] + [401] * (limit - 1)
    assert await login("bad-last") == 401, "the success was not counted as a failure"
    assert await login("bad-over") == 429


def test_login_throttle_reserves_before_the_check_and_refunds_successes() -> None:
    clock = FakeClock()
    throttle = LoginThrottle(3, 60.0, clock)
    held = [throttle.reserve("a") for _ in range(3)]
    with pytest.raises(LoginThrottled) as refused:
        throttle.reserve("a")
    assert refused.value.retry_after == 60.0
    throttle.reserve("b")  # another client has its own budget
    throttle.refund(held[1])
    again = throttle.reserve("a")
    assert again.at == held[1].at, "same instant, yet a distinct attempt"
    throttle.refund(again)
    throttle.refund(again)  # refunding twice gives back one attempt only
    throttle.reserve("a")
    with pytest.raises(LoginThrottled):
        throttle.reserve("a")
    clock.advance(30)
    with pytest.raises(LoginThrottled) as later:
        throttle.reserve("a")
    assert later.value.retry_after == 30.0
    clock.advance(30)
    fresh = throttle.reserve("a")
    throttle.refund(held[0])  # already outside the window: nothing to give back
    assert fresh.at == clock.now


async def test_foreign_host_is_refused(start_admin: StartAdmin) -> None:
    admin = await start_admin(config_changes={"allowed_hosts": ("admin.example",)})
    port = admin.server.port
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1"):
        reply = await admin.get("/api/settings", headers={"Host": host})
        assert reply.status == 403, host
        assert reply.json["error"] == "forbidden_host"
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "admin.example", "admin.example:443"):
        assert (await admin.get("/api/settings", headers={"Host": host})).status == 200, host
    assert (await admin.get("/health", headers={"Host": "evil.example"})).status == 200


async def test_foreign_origin_on_state_change_is_refused(admin: Admin) -> None:
    body = {"label": "Qwen", "value": "ollama/qwen3"}
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": admin.origin.replace("127.0.0.1", "localhost")},
        {"Referer": "http://evil.example/page"},
    ):
        reply = await admin.post("/api/models/presets", body, headers=headers)
        assert reply.status == 403, headers
        assert reply.json["error"] == "forbidden_origin"
    rows = await admin.services.db.fetchall("SELECT value FROM model_presets")
    assert [row["value"] for row in rows] == ["ollama/test-model"], "only the one seeded at start"
    read = await admin.get("/api/models/presets", headers={"Origin": "http://evil.example"})
    assert read.status == 200, "reads are not state-changing"
    created = await admin.post("/api/models/presets", body, headers={"Origin": admin.origin})
    assert created.status == 201
    ok_referer = {"Referer": admin.url + "/notes"}
    path = f"/api/models/presets/{created.json['id']}"
    assert (await admin.delete(path, headers=ok_referer)).status == 200
    assert (await admin.post("/api/models/presets", body)).status == 201, "bearer without Origin"


async def test_no_credentials_configured_locks_the_api(start_admin: StartAdmin) -> None:
    admin = await start_admin(admin_password=None, admin_token=None)
    reply = await admin.get("/api/settings")
    assert reply.status == 401
    assert reply.json["error"] == "auth_not_configured"
    assert "ADMIN_PASSWORD" in reply.json["detail"] and "ADMIN_TOKEN" in reply.json["detail"]
    login = await admin.post(
        "/api/auth/login", {"password": "x"}, token=None, headers={"Origin": admin.origin}
    )
    assert login.status == 401 and login.json["error"] == "password_login_disabled"


async def test_token_only_and_password_only(start_admin: StartAdmin) -> None:
    token_only = await start_admin(admin_password=None)
    assert (await token_only.get("/api/settings")).status == 200
    password_only = await start_admin(admin_token=None)
    assert (await password_only.get("/api/settings")).status == 401, "no token configured"


def test_bind_check() -> None:
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        check_bind(host, password_set=False)
    for host in ("0.0.0.0", "", "::", "192.168.1.10", "example.com"):
        with pytest.raises(UnsafeBindError, match="ADMIN_PASSWORD"):
            check_bind(host, password_set=False)
        check_bind(host, password_set=True)


async def test_serve_refuses_public_bind_without_password(admin: Admin) -> None:
    config = AdminConfig(host="0.0.0.0", port=0, token=b"x" * 32)
    with pytest.raises(UnsafeBindError):
        await serve(admin.services, config=config)


def test_python_m_admin_api_refuses_public_bind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setenv("ADMIN_HOST", "0.0.0.0")
    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)
    assert admin_main([]) == 2
    assert "ADMIN_PASSWORD" in capsys.readouterr().err


def test_password_hash_keeps_no_plain_text() -> None:
    from bot.config import Settings

    settings = Settings(_env_file=None, admin_password=PASSWORD, admin_token=TOKEN)  # type: ignore[call-arg]
    config = AdminConfig.from_settings(settings)
    assert config.password is not None and config.password.verify(PASSWORD)
    assert not config.password.verify(PASSWORD + " ")
    assert PASSWORD not in repr(config) and TOKEN not in repr(config)
    assert PASSWORD.encode() not in config.password.digest
