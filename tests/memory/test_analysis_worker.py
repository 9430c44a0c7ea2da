"""JapaneseAnalyzer in its worker process: the same nouns as in-process, batched, replaced when
it dies, and Janome never loaded in the bot's own process."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.memory.analysis_worker import AnalyzerProcess, WorkerFailed
from bot.memory.japanese import InProcessAnalyzer, JapaneseAnalyzer

TEXTS = [
    "今日は東京で美味しいラーメンを食べました。",
    "最近、機械学習の勉強を始めた。円安が進んでいる。",
    "I learned about Kubernetes and Python with my friends",
    "ＡＩとｶﾒﾗ、それと Docker の話。https://example.com と `code` は除く",
    "自分のことは本当に感じで、その人の事は the thing と猫",
    "",
    "   \n ",
    '改行\nを含む"引用"と\\バックスラッシュ',
]


@pytest.fixture(scope="module")
def in_process() -> Iterator[InProcessAnalyzer]:
    analyzer = InProcessAnalyzer()
    yield analyzer
    analyzer.close()


@pytest.fixture
async def analyzer() -> AsyncIterator[JapaneseAnalyzer]:
    analyzer = JapaneseAnalyzer()
    await analyzer.warm_up()
    yield analyzer
    await analyzer.close()


async def test_results_are_those_of_the_in_process_analyzer(
    analyzer: JapaneseAnalyzer, in_process: InProcessAnalyzer
) -> None:
    expected = [in_process.nouns(text) for text in TEXTS]
    assert await analyzer.nouns_many(TEXTS) == expected
    assert [await analyzer.nouns_async(text) for text in TEXTS] == expected
    assert await analyzer.nouns_many([]) == []


async def test_long_input_is_cut_as_in_process(in_process: InProcessAnalyzer) -> None:
    short = JapaneseAnalyzer(max_chars=7)
    try:
        assert await short.nouns_async("猫と犬の写真。カメラの話") == ["猫", "犬", "写真"]
    finally:
        await short.close()


async def test_requests_at_once_share_batches(
    analyzer: JapaneseAnalyzer, in_process: InProcessAnalyzer
) -> None:
    texts = [f"東京のラーメンとカメラの話{i}。機械学習も好き" for i in range(40)]
    before = analyzer._worker.batches
    got = await asyncio.gather(*(analyzer.nouns_async(text) for text in texts))
    assert list(got) == [in_process.nouns(text) for text in texts]
    assert analyzer._worker.batches - before <= 2


async def test_a_killed_worker_is_replaced_and_its_batch_answered(
    analyzer: JapaneseAnalyzer, caplog: pytest.LogCaptureFixture
) -> None:
    first = analyzer.worker_pid
    assert first is not None
    os.kill(first, signal.SIGKILL)  # the next batch goes to the dead worker, then to a new one
    with caplog.at_level(logging.WARNING, logger="bot.memory.analysis_worker"):
        assert await analyzer.nouns_many(["東京のラーメン"] * 50) == [["東京", "ラーメン"]] * 50
    assert any("starting a new one" in r.getMessage() for r in caplog.records)
    assert analyzer.loaded
    assert analyzer.worker_pid not in (None, first)
    assert await analyzer.nouns_async("猫と犬") == ["猫", "犬"]


async def test_a_worker_that_cannot_start_costs_the_nouns_not_the_turn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(self: AnalyzerProcess) -> None:
        raise WorkerFailed("no worker today")

    monkeypatch.setattr(AnalyzerProcess, "start", broken)
    analyzer = JapaneseAnalyzer()
    with caplog.at_level(logging.WARNING, logger="bot.memory.analysis_worker"):
        assert await analyzer.nouns_async("猫と犬") == []
    await analyzer.close()
    assert any("going on without their nouns" in r.getMessage() for r in caplog.records)


PROBE = """
import asyncio, json, sys
import bot.bot, bot.services
from bot.memory.japanese import JapaneseAnalyzer

async def main():
    analyzer = JapaneseAnalyzer()
    await analyzer.warm_up()
    nouns = await analyzer.nouns_async("東京でラーメン")
    worker = analyzer.worker_pid
    await analyzer.close()
    return nouns, worker

nouns, worker = asyncio.run(main())
print(json.dumps({"nouns": nouns, "worker": worker,
                  "janome": sorted(m for m in sys.modules if m.startswith("janome"))}))
"""


def test_the_bot_process_never_imports_janome() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        check=False,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["nouns"] == ["東京", "ラーメン"]
    assert result["worker"] is not None
    assert result["janome"] == []


async def test_a_spawned_worker_is_the_one_that_answers(in_process: InProcessAnalyzer) -> None:
    analyzer = JapaneseAnalyzer()
    try:
        await analyzer.spawn()
        spawned = analyzer.worker_pid
        assert spawned is not None and not analyzer.loaded  # started, not waited for
        assert await analyzer.nouns_many(TEXTS[:2]) == [in_process.nouns(t) for t in TEXTS[:2]]
        assert analyzer.loaded and analyzer.worker_pid == spawned  # no second worker
    finally:
        await analyzer.close()


async def test_closing_a_spawned_worker_never_waited_for_ends_it() -> None:
    analyzer = JapaneseAnalyzer()
    await analyzer.spawn()
    spawned = analyzer.worker_pid
    assert spawned is not None
    await analyzer.close()  # as when start-up fails before the services wait for it
    assert analyzer.worker_pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(spawned, 0)  # ended and reaped
