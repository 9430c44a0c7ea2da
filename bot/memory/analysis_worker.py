"""Japanese analysis in one worker process: Janome and its dictionary stay out of the bot.

The bot talks to the worker (`python -m bot.memory.japanese`, which runs `serve` with
`InProcessAnalyzer`) over its stdin and stdout, one JSON line per batch each way:
`{"texts": [...]}` in, `{"nouns": [[...], ...]}` out. The worker loads the dictionary (about
80 MiB) before it says it is ready, and its answers are exactly the in-process ones. Requests
that arrive while a batch is out go together in the next one. A worker that dies is replaced,
and the batch it held is sent once more to the new one; a batch that fails again (or a worker
that cannot start) is logged and answered with no nouns, so the caller's turn goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

# One batch line can carry a whole backfill chunk (100 texts of up to 20,000 characters).
_LINE_LIMIT = 64 * 1024 * 1024
_START_TIMEOUT = 60.0
_BATCH_TIMEOUT = 120.0
_STOP_TIMEOUT = 5.0
# The folder holding the `bot` package: the worker imports it from there whatever its cwd.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class WorkerFailed(Exception):
    """The worker process died or answered with something else than a batch's nouns."""


class _Pending:
    """Texts waiting for the next batch, each with the future of its caller."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.waiters: list[tuple[int, int, asyncio.Future[list[list[str]]]]] = []

    def add(self, texts: Sequence[str]) -> asyncio.Future[list[list[str]]]:
        future: asyncio.Future[list[list[str]]] = asyncio.get_running_loop().create_future()
        self.waiters.append((len(self.texts), len(texts), future))
        self.texts.extend(texts)
        return future


class AnalyzerProcess:
    """The client side: batches requests to one worker process, starting it when needed."""

    def __init__(self, module: str, max_chars: int) -> None:
        self._module = module
        self._max_chars = max_chars
        self._process: asyncio.subprocess.Process | None = None
        # Spawned by `spawn`, not yet known to be ready (`start` waits for it).
        self._spawned: asyncio.subprocess.Process | None = None
        self._start_lock = asyncio.Lock()
        self._pending = _Pending()
        self._sender: asyncio.Task[None] | None = None
        self._closed = False
        self.batches = 0

    @property
    def pid(self) -> int | None:
        """The worker's process id, while one runs (also while it is still loading)."""
        process = self._process or self._spawned
        return None if process is None else process.pid

    @property
    def running(self) -> bool:
        """True while a worker process is up."""
        return self._process is not None and self._process.returncode is None

    async def spawn(self) -> None:
        """Start the worker process without waiting for its dictionary (`start` waits): it
        loads on another core while this process goes on with its own start-up."""
        async with self._start_lock:
            if not self.running and self._spawned is None:
                self._spawned = await self._create()

    async def start(self) -> None:
        """Start the worker (if none runs) and wait until its dictionary is loaded."""
        async with self._start_lock:
            if self.running:
                return
            process, self._spawned = self._spawned or await self._create(), None
            try:
                assert process.stdout is not None
                ready = await asyncio.wait_for(process.stdout.readline(), _START_TIMEOUT)
                if json.loads(ready or b"null") != {"ready": True}:
                    raise WorkerFailed(f"the analysis worker did not start ({ready[:200]!r})")
            except BaseException:
                await _stop(process)
                raise
            self._process = process
            log.debug("analysis worker %d ready", process.pid)

    async def _create(self) -> asyncio.subprocess.Process:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT, *filter(None, [env.get("PYTHONPATH")])])
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            self._module,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=env,
            limit=_LINE_LIMIT,
        )

    async def nouns_many(self, texts: Sequence[str]) -> list[list[str]]:
        """Nouns of each text, from the worker (no nouns for a batch that failed twice)."""
        if not texts:
            return []
        if self._closed:
            raise RuntimeError("the analyzer is closed")
        future = self._pending.add([text[: self._max_chars] for text in texts])
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send_all())
        return await future

    async def _send_all(self) -> None:
        while self._pending.texts:
            batch, self._pending = self._pending, _Pending()
            try:
                results = await self._run_batch(batch.texts)
            except Exception as exc:  # a poisoned batch or a worker that cannot start
                log.warning(
                    "Japanese analysis of %d texts failed (%s); going on without their nouns",
                    len(batch.texts),
                    exc,
                )
                results = [[] for _ in batch.texts]
            for start, count, future in batch.waiters:
                if not future.done():
                    future.set_result(results[start : start + count])

    async def _run_batch(self, texts: list[str]) -> list[list[str]]:
        for attempt in (1, 2):
            try:
                return await self._exchange(texts)
            except WorkerFailed as exc:
                await self._discard()
                if attempt == 2:
                    raise
                log.warning("the analysis worker failed (%s); starting a new one", exc)
        raise AssertionError("unreachable")

    async def _exchange(self, texts: list[str]) -> list[list[str]]:
        if not self.running:
            await self.start()
        process = self._process
        assert process is not None and process.stdin is not None and process.stdout is not None
        line = json.dumps({"texts": texts}, ensure_ascii=False).encode() + b"\n"
        try:
            process.stdin.write(line)
            await process.stdin.drain()
            answer = await asyncio.wait_for(process.stdout.readline(), _BATCH_TIMEOUT)
        except (OSError, TimeoutError, asyncio.LimitOverrunError, ValueError) as exc:
            raise WorkerFailed(f"{type(exc).__name__}: {exc}") from exc
        if not answer:
            raise WorkerFailed(f"the worker exited (code {await process.wait()})")
        self.batches += 1
        try:
            nouns = json.loads(answer)["nouns"]
        except (ValueError, KeyError, TypeError) as exc:
            raise WorkerFailed(f"unreadable answer {answer[:200]!r}") from exc
        if not isinstance(nouns, list) or len(nouns) != len(texts):
            raise WorkerFailed("an answer of the wrong length")
        return [[str(word) for word in words] for words in nouns]

    async def _discard(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            await _stop(process)
        spawned, self._spawned = self._spawned, None
        if spawned is not None:
            await _stop(spawned)

    async def close(self) -> None:
        """Stop the worker; requests still queued are answered first."""
        self._closed = True
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)
        await self._discard()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """End the worker: EOF on its stdin, then a kill if it does not exit in time."""
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), _STOP_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()


# --------------------------------------------------------------------------- the worker side


def serve(nouns: Callable[[str], list[str]]) -> None:
    """The worker's loop (its dictionary already loaded): one batch per line until EOF."""
    # Ctrl-C in the bot's terminal reaches the whole process group; the bot stops us (EOF).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = sys.stdout.buffer
    out.write(b'{"ready": true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        texts = json.loads(line)["texts"]
        answer = {"nouns": [nouns(str(text)) for text in texts]}
        out.write(json.dumps(answer, ensure_ascii=False).encode() + b"\n")
        out.flush()
