"""HTTP layer of the loopback Discord: Discord-shaped errors, call recording, injected
failures and the per-channel message rate limit.

JSON answers carry `Content-Type: application/json` exactly (discord.py does not parse
`...; charset=utf-8`). A 429 carries `Via` and a JSON body with `retry_after`, as Discord's do:
without `Via` discord.py takes it for a Cloudflare ban and raises at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

from tests.fakes.discord_models import JSON, Notifier, RestCall, UploadedFile

log = logging.getLogger(__name__)

API = "/api/v10"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CALL_KEY = web.RequestKey("fake_discord_call", RestCall)
_MESSAGE_BUCKET = re.compile(r"^/channels/(\d+)/messages(?:/(\d+))?$")
_NO_AUTH_PREFIXES = ("/interactions/", "/webhooks/", "/attachments/")


class DiscordError(Exception):
    """An error answer in Discord's shape."""

    def __init__(self, status: int, code: int, message: str, errors: JSON | None = None) -> None:
        super().__init__(f"{status} {code} {message}")
        self.status, self.code, self.message, self.errors = status, code, message, errors

    def response(self) -> web.Response:
        """The JSON error response."""
        body: JSON = {"message": self.message, "code": self.code}
        if self.errors is not None:
            body["errors"] = self.errors
        return json_response(body, status=self.status)


def json_response(
    data: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    """A JSON response with the exact Content-Type discord.py accepts."""
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={"Content-Type": "application/json", **(headers or {})},
    )


def form_error(field_name: str, code: str, message: str) -> DiscordError:
    """400 "Invalid Form Body" (50035) naming the bad field."""
    errors = {field_name: {"_errors": [{"code": code, "message": message}]}}
    return DiscordError(400, 50035, "Invalid Form Body", errors)


def unknown(what: str, code: int) -> DiscordError:
    """404 "Unknown <what>" with Discord's code."""
    return DiscordError(404, code, f"Unknown {what}")


def snowflake(raw: Any) -> int:
    """An id from a path or body, or a 50035 error."""
    try:
        return int(raw)
    except (TypeError, ValueError) as exc:
        raise form_error("id", "NUMBER_TYPE_COERCE", f"Value {raw!r} is not snowflake.") from exc


def body_of(request: web.Request) -> JSON:
    """The request's JSON object body ({} when empty)."""
    body = request[CALL_KEY].json
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise DiscordError(400, 50035, "Invalid Form Body")
    return body


def files_of(request: web.Request) -> list[UploadedFile]:
    """Files of a multipart request."""
    return request[CALL_KEY].files


@dataclass
class FailRule:
    """A canned failure for the next `times` requests matching method and path regex."""

    method: str
    pattern: re.Pattern[str]
    status: int
    retry_after: float
    times: int
    code: int
    message: str
    is_global: bool
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        """Method ("*" = any) and path regex (searched in the path without /api/v10)."""
        return self.method in ("*", method) and self.pattern.search(path) is not None


@dataclass
class ChannelRateLimit:
    """Discord's per-channel message bucket (creates and edits share it), fixed windows."""

    limit: int
    per: float
    windows: dict[int, tuple[float, int]] = field(default_factory=dict)

    def take(self, channel_id: int, now: float) -> tuple[int, float, bool]:
        """Consume one slot: (remaining, reset_after, allowed)."""
        start, count = self.windows.get(channel_id, (now, 0))
        if now >= start + self.per:
            start, count = now, 0
        reset_after = start + self.per - now
        if count >= self.limit:
            return 0, reset_after, False
        self.windows[channel_id] = (start, count + 1)
        return self.limit - count - 1, reset_after, True


def rate_limit_headers(
    limit: int, remaining: int, reset_after: float, bucket: str
) -> dict[str, str]:
    """X-RateLimit-* headers, all present together as discord.py requires."""
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": f"{time.time() + reset_after:.3f}",
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        "X-RateLimit-Bucket": bucket,
    }


def too_many_requests(retry_after: float, *, is_global: bool, limit: int = 5) -> web.Response:
    """A 429 as Discord sends it (Via header so discord.py waits and retries)."""
    headers = {
        "Via": "1.1 google",
        "Retry-After": str(max(1, math.ceil(retry_after))),
        "X-RateLimit-Scope": "global" if is_global else "user",
        **rate_limit_headers(limit, 0, retry_after, "fake-bucket"),
    }
    if is_global:
        headers["X-RateLimit-Global"] = "true"
    body = {
        "message": "You are being rate limited.",
        "retry_after": retry_after,
        "global": is_global,
    }
    return json_response(body, status=429, headers=headers)


class HttpLayer:
    """Records every call, checks the bot token, applies injected failures and rate limits."""

    def __init__(self, notifier: Notifier, *, token: str) -> None:
        self.notifier = notifier
        self.token = token
        self.calls: list[RestCall] = []
        self.fail_rules: list[FailRule] = []
        self.rate_limit: ChannelRateLimit | None = None
        self.errors: list[BaseException] = []

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Record the call, then auth, injected failures, rate limits, the handler."""
        path = request.path
        if not path.startswith((API + "/", "/attachments/")):
            return await handler(request)
        rel = path.removeprefix(API)
        now = asyncio.get_running_loop().time()
        call = RestCall(
            request.method, rel, dict(request.query), None, [], dict(request.headers), now
        )
        self.calls.append(call)
        request[CALL_KEY] = call
        try:
            response = await self._process(request, handler, call)
        except DiscordError as exc:
            response = exc.response()
        except web.HTTPException as exc:
            if exc.status in (404, 405):
                log.warning("fake Discord has no route for %s %s", request.method, rel)
            response = json_response(
                {"message": f"{exc.status}: {exc.reason}", "code": 0}, status=exc.status
            )
        except Exception as exc:
            # A bug in the fake: answer 400, not 5xx, which discord.py retries for ~25 s.
            log.exception("fake Discord failed on %s %s", request.method, rel)
            self.errors.append(exc)
            response = json_response(
                {"message": f"fake Discord bug: {exc!r}", "code": 0}, status=400
            )
        call.status = response.status
        call.response_headers = dict(response.headers)
        self.notifier.changed()
        return response

    async def _process(
        self, request: web.Request, handler: Handler, call: RestCall
    ) -> web.StreamResponse:
        await self._read_body(request, call)
        authorized = request.headers.get("Authorization") == f"Bot {self.token}"
        if not call.path.startswith(_NO_AUTH_PREFIXES) and not authorized:
            raise DiscordError(401, 0, "401: Unauthorized")
        for rule in self.fail_rules:
            if rule.matches(call.method, call.path):
                return self._fail(rule)
        bucket = _MESSAGE_BUCKET.match(call.path)
        limited = (
            self.rate_limit is not None
            and bucket is not None
            and (call.method, bucket.group(2) is None) in (("POST", True), ("PATCH", False))
        )
        if not limited:
            return await handler(request)
        assert self.rate_limit is not None and bucket is not None
        rl = self.rate_limit
        remaining, reset_after, allowed = rl.take(int(bucket.group(1)), call.at)
        if not allowed:
            return too_many_requests(reset_after, is_global=False, limit=rl.limit)
        response = await handler(request)
        response.headers.update(
            rate_limit_headers(rl.limit, remaining, reset_after, "fake-messages")
        )
        return response

    def _fail(self, rule: FailRule) -> web.Response:
        rule.hits += 1
        rule.times -= 1
        if rule.times <= 0:
            self.fail_rules.remove(rule)
        if rule.status == 429:
            return too_many_requests(rule.retry_after, is_global=rule.is_global)
        return json_response({"message": rule.message, "code": rule.code}, status=rule.status)

    async def _read_body(self, request: web.Request, call: RestCall) -> None:
        if request.content_type.startswith("multipart/"):
            reader = await request.multipart()
            while (part := await reader.next()) is not None:
                if not isinstance(part, BodyPartReader):
                    continue
                if part.name == "payload_json":
                    call.json = self._parse_json(await part.read())
                else:
                    data = await part.read()
                    ctype = part.headers.get("Content-Type")
                    call.files.append(
                        UploadedFile(part.name or "", part.filename, ctype, bytes(data))
                    )
        elif request.can_read_body:
            call.json = self._parse_json(await request.read())

    @staticmethod
    def _parse_json(raw: bytes) -> Any:
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise DiscordError(400, 50109, "The request body contains invalid JSON.") from exc
