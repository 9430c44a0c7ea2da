"""The live application log: a real SSE stream from the admin API (level filter, secrets
masked, records from threads, resume by Last-Event-ID, a slow reader's drops counted), and the
handler itself never waiting for a reader."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from bot.utils.live_log import LiveLog
from tests.admin_api.conftest import API_KEY, TOKEN, Admin, StartAdmin

LOGGER = "bot.live_log_test"


class Stream:
    """The frames of one open live-log stream."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def frame(self) -> tuple[str | None, dict[str, Any]]:
        """The next event (its id and data), skipping keep-alive comments."""
        while True:
            raw = await asyncio.wait_for(self.response.content.readuntil(b"\n\n"), 10)
            lines = raw.decode().strip().splitlines()
            data = [line[len("data: ") :] for line in lines if line.startswith("data: ")]
            if data:
                ids = [line[len("id: ") :] for line in lines if line.startswith("id: ")]
                return (ids[0] if ids else None), json.loads(data[0])

    async def entries_until(self, marker: str) -> list[dict[str, Any]]:
        """Events up to (and with) the entry whose message contains `marker`."""
        seen = []
        while True:
            _, event = await self.frame()
            seen.append(event)
            if event["type"] == "entry" and marker in event["message"]:
                return seen


@asynccontextmanager
async def live(
    admin: Admin, headers: dict[str, str] | None = None, **query: str
) -> AsyncIterator[Stream]:
    sent = {"Authorization": f"Bearer {TOKEN}", **(headers or {})}
    async with admin.http.get(admin.url + "/api/logs/live", params=query, headers=sent) as response:
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/event-stream")
        yield Stream(response)


async def test_the_stream_filters_by_level_and_masks_secrets(
    start_admin: StartAdmin, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    admin = await start_admin(llm_api_key=API_KEY)
    logger = logging.getLogger(LOGGER)
    async with live(admin, level="WARNING", backlog="0") as stream:
        logger.info("quiet info line")
        logger.warning("calling with key %s and Bearer abcdefghijklmnop", API_KEY)
        await asyncio.to_thread(logger.error, "from a worker thread")
        logger.warning("end of part one")
        events = await stream.entries_until("end of part one")
    messages = [e["message"] for e in events]
    assert not any("quiet info line" in m for m in messages)
    (keyed,) = [m for m in messages if m.startswith("calling with key")]
    assert API_KEY not in keyed and "abcdefghijklmnop" not in keyed and "[REDACTED]" in keyed
    assert "from a worker thread" in messages
    entry = next(e for e in events if e["message"] == "from a worker thread")
    assert (entry["level"], entry["logger"]) == ("ERROR", LOGGER)

    recent = await admin.get("/api/logs/live/recent", params={"level": "INFO", "backlog": "50"})
    kept = [e["message"] for e in recent.json["entries"]]
    assert "quiet info line" in kept and API_KEY not in recent.text
    assert (await admin.get("/api/logs/live", params={"level": "LOUD"})).status == 422


async def test_a_reconnecting_reader_continues_after_its_last_event(
    admin: Admin, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    logger = logging.getLogger(LOGGER)
    for number in range(3):
        logger.info("numbered %d", number)
    async with live(admin, level="INFO", backlog="1000") as stream:
        events = await stream.entries_until("numbered 2")
    first = next(e for e in events if e["message"] == "numbered 0")
    async with live(admin, {"Last-Event-ID": str(first["id"])}, level="INFO") as stream:
        _, event = await stream.frame()
        assert event["message"] == "numbered 1"


async def test_a_slow_reader_loses_records_counted_and_logging_never_waits(
    admin: Admin, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    logger = logging.getLogger(LOGGER)
    monkeypatch.setattr(admin.services.live_log, "queue_size", 5)
    async with live(admin, level="INFO", backlog="0") as stream:
        # One burst without yielding: the stream's writer cannot take anything meanwhile.
        for number in range(50):
            logger.info("burst %d", number)
        events = await stream.entries_until("burst 4")
        (dropped,) = [e for e in events if e["type"] == "dropped"]
        assert dropped["count"] == 45
        assert [e["message"] for e in events if e["type"] == "entry"] == [
            f"burst {n}" for n in range(5)
        ]
        logger.info("after the burst")
        assert (await stream.entries_until("after the burst"))[-1]["type"] == "entry"
    assert admin.services.live_log.recent(limit=1)[0].message == "after the burst"


async def test_the_handler_never_blocks_on_a_reader_that_does_not_read() -> None:
    feed = LiveLog(lambda: ["hunter2-secret"], capacity=10, queue_size=3)
    subscription = feed.subscribe(logging.INFO)
    record = logging.LogRecord(
        LOGGER, logging.INFO, __file__, 1, "pw %s", ("hunter2-secret",), None
    )
    started = time.perf_counter()
    for _ in range(1000):
        feed.handle(record)
    assert time.perf_counter() - started < 2.0
    assert subscription.dropped == 997
    batch = await subscription.next_batch()
    assert [entry.message for entry in batch] == ["pw [REDACTED]"] * 3
    assert len(feed.recent(limit=100)) == 10, "the ring keeps only its capacity"
    debug = logging.LogRecord(LOGGER, logging.DEBUG, __file__, 1, "low", None, None)
    feed.handle(debug)
    assert subscription.dropped == 997, "below the reader's level: not offered at all"
    feed.unsubscribe(subscription)
    assert feed.subscribers == 0


async def test_the_stream_and_the_recent_list_filter_by_text_and_logger(
    admin: Admin, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    kept_logger = logging.getLogger(LOGGER + ".kept")
    dropped_logger = logging.getLogger(LOGGER + ".kept.noisy")
    other = logging.getLogger("bot.elsewhere")
    query = {
        "level": "INFO",
        "backlog": "0",
        "text": "KYOTO",
        "logger": f"{LOGGER},-{LOGGER}.kept.noisy",
    }
    async with live(admin, **query) as stream:
        kept_logger.info("weather in Kyoto: sunny")
        kept_logger.info("weather in Osaka: rain")
        dropped_logger.info("kyoto from the noisy child")
        other.info("kyoto from another logger")
        logging.getLogger(LOGGER).info("the end of kyoto")
        events = await stream.entries_until("the end of kyoto")
    assert [(e["logger"], e["message"]) for e in events] == [
        (LOGGER + ".kept", "weather in Kyoto: sunny"),
        (LOGGER, "the end of kyoto"),
    ]
    recent = await admin.get(
        "/api/logs/live/recent", params={k: v for k, v in query.items() if k != "backlog"}
    )
    assert [e["message"] for e in recent.json["entries"]] == [
        "weather in Kyoto: sunny",
        "the end of kyoto",
    ]
