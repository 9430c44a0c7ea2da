"""A large request is logged like a small one: one row per call, whole and redacted.

Its JSON is built on a thread (above LOG_ON_THREAD_CHARS); the row must not differ for that.
"""

from __future__ import annotations

import json

import pytest

from bot.llm.gateway import LOG_ON_THREAD_CHARS
from bot.services import Services
from bot.store.repos.api_logs import ApiLogFilter
from tests.fakes.llm_server import FakeLLMServer, Text

SECRET = "sk-abcdefghijklmnop0123"


@pytest.mark.parametrize("size", [100, LOG_ON_THREAD_CHARS * 2])
async def test_a_request_of_any_size_leaves_one_whole_redacted_row(
    services: Services, llm: FakeLLMServer, size: int
) -> None:
    text = f"my key is {SECRET} " + "長い文章 and words " * (size // 16)
    llm.script(Text("ok"), Text("fine"))
    answer = "".join(
        [d.text async for d in services.gateway.stream([{"role": "user", "content": text}])]
    )
    reply = await services.gateway.complete([{"role": "user", "content": text}], purpose="tagging")
    assert (answer, reply.text) == ("ok", "fine")
    rows = list(reversed(await services.repos.api_logs.list(ApiLogFilter())))
    assert [row.purpose for row in rows] == ["chat", "tagging"]
    for row in rows:
        assert SECRET not in row.request_json
        logged = json.loads(row.request_json)["messages"][0]["content"]
        assert logged == text.replace(SECRET, "[REDACTED]")


async def test_credentials_at_the_edge_are_masked_and_prose_words_kept(
    services: Services, llm: FakeLLMServer
) -> None:
    text = (
        "pass next_token unchanged; the bot answers, token'  : abcd, PASSWORD=hunter22, "
        "Bearer abcdefgh, bot abcdefg, api_\u212aey:zyxwvuts"
    )
    llm.script(Text("the secret: s3cr3tvalue"))
    answer = "".join(
        [d.text async for d in services.gateway.stream([{"role": "user", "content": text}])]
    )
    assert answer == "the secret: s3cr3tvalue"
    (row,) = await services.repos.api_logs.list(ApiLogFilter())
    assert json.loads(row.request_json)["messages"][0]["content"] == (
        "pass next_token unchanged; the bot answers, token'  : [REDACTED], PASSWORD=[REDACTED], "
        "[REDACTED], bot abcdefg, api_\u212aey:[REDACTED]"
    )
    assert row.response_text == "the secret: [REDACTED]"
