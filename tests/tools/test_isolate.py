"""IsolatedRunner: results and exceptions cross over; hangs, memory hogs, crashes and hostile
PDF/HTML cost a bounded IsolationError while the event loop keeps serving."""

from __future__ import annotations

import asyncio
import json
import os
import struct
import sys
import time
import zlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.tools.isolate import IsolatedRunner, IsolationError
from bot.tools.safe_http import FetchPolicy, SafeFetcher
from tests.fakes.web_server import FakeWebServer

MB = 1024 * 1024

# --- functions run in the worker (top level, so they pickle by reference) ---------------------


def add(a: int, b: int) -> int:
    return a + b


def worker_pid() -> int:
    return os.getpid()


def environment_value(name: str) -> str | None:
    return os.environ.get(name)


def spin() -> None:
    while True:
        pass


def announce_then_spin(path: str) -> None:
    Path(path).write_text(str(os.getpid()))
    spin()


def hog() -> int:
    return len(b"x" * (2 * 1024 * MB))


def not_a_pdf(data: bytes) -> None:
    raise ValueError(f"not a PDF: {data[:4]!r}")


def die() -> None:
    os._exit(3)


class StubbornError(Exception):
    def __init__(self, reason: str, code: int) -> None:
        super().__init__(reason)
        self.code = code


def raise_stubborn() -> None:
    raise StubbornError("cannot be rebuilt", 7)


def pdf_text(data: bytes) -> str:
    import pypdfium2

    document = pypdfium2.PdfDocument(data)
    try:
        return "".join(page.get_textpage().get_text_range() for page in document)
    finally:
        document.close()


def import_parsers() -> None:
    import pypdfium2
    import selectolax.lexbor

    assert pypdfium2.PdfDocument and selectolax.lexbor.LexborHTMLParser


def html_text(html: str) -> str:
    from selectolax.lexbor import LexborHTMLParser

    return LexborHTMLParser(html).text()


# --- hostile inputs --------------------------------------------------------------------------


def zlib_repeated(block: bytes, times: int) -> bytes:
    """zlib data of block * times, built by repeating one compressed segment (fast, tiny)."""
    compressor = zlib.compressobj(9)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    # After a full flush the compressor starts afresh, so each further block compresses alike.
    repeat = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    checksum = 1
    for _ in range(times):
        checksum = zlib.adler32(block, checksum)
    # An empty final deflate block, then the Adler-32 of everything.
    return first + repeat * (times - 1) + b"\x03\x00" + struct.pack(">I", checksum)


def one_page_pdf(content: bytes) -> bytes:
    """A one-page PDF whose page content stream is the given zlib data."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(content)
        + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def slow_pdf() -> bytes:
    """~230 KB: five million text operators, several seconds of pdfium text extraction."""
    block = b"BT /F1 1 Tf " + b"(x) Tj 0.001 0 Td " * 50_000 + b"ET\n"
    return one_page_pdf(zlib_repeated(block, 100))


def bomb_pdf() -> bytes:
    """~530 KB: a content stream that inflates to 512 MB."""
    return one_page_pdf(zlib_repeated(b" " * MB, 512))


def nested_html(depth: int = 60_000) -> str:
    """~0.4 MB of nested divs: lexbor's tree building is quadratic in the depth."""
    return "<html><body>" + "<div>" * depth + "x" + "</div>" * depth + "</body></html>"


# --- helpers ---------------------------------------------------------------------------------


@pytest.fixture
async def runner() -> AsyncIterator[IsolatedRunner]:
    runner = IsolatedRunner(timeout=20.0, memory_mb=512)
    yield runner
    await runner.close()


class LagMeter:
    """Measures how late the event loop wakes a 10 ms ticker while something else runs."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.ticks = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LagMeter:
        self._task = asyncio.create_task(self._tick())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._task is not None
        await self._task

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._stop.is_set():
            before = loop.time()
            await asyncio.sleep(0.01)  # the measurement itself, not synchronisation
            self.worst = max(self.worst, loop.time() - before - 0.01)
            self.ticks += 1


# --- basics ----------------------------------------------------------------------------------


async def test_result_round_trip_on_a_warm_worker(runner: IsolatedRunner) -> None:
    assert await runner.run(add, 2, 3) == 5
    first_pid = await runner.run(worker_pid)
    assert first_pid != os.getpid()
    assert await runner.run(worker_pid) == first_pid  # reused, not respawned
    payload = bytes(range(256)) * 4096
    assert await runner.run(len, payload) == len(payload)


async def test_exception_is_reraised_as_itself(runner: IsolatedRunner) -> None:
    with pytest.raises(ValueError, match=r"not a PDF: b'%PNG'"):
        await runner.run(not_a_pdf, b"%PNG....")
    pid = await runner.run(worker_pid)
    with pytest.raises(ValueError):
        await runner.run(not_a_pdf, b"")
    assert await runner.run(worker_pid) == pid  # an ordinary exception keeps the worker


async def test_exception_that_cannot_cross_becomes_isolation_error(runner: IsolatedRunner) -> None:
    with pytest.raises(IsolationError, match="Parser crashed: StubbornError: cannot be rebuilt"):
        await runner.run(raise_stubborn)
    assert await runner.run(add, 1, 1) == 2


async def test_unpicklable_function_is_a_type_error(runner: IsolatedRunner) -> None:
    with pytest.raises(TypeError, match="picklable"):
        await runner.run(lambda: 1)

    def from_main() -> int:
        return 1

    from_main.__module__ = "__main__"
    with pytest.raises(TypeError, match="importable module"):
        await runner.run(from_main)


async def test_worker_environment_holds_no_secrets(
    runner: IsolatedRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "not-for-parsers")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    assert await runner.run(environment_value, "DISCORD_TOKEN") is None
    assert await runner.run(environment_value, "LC_ALL") == "C.UTF-8"


async def test_endless_loop_is_killed_at_the_deadline(runner: IsolatedRunner) -> None:
    pid = await runner.run(worker_pid)
    started = time.monotonic()
    with pytest.raises(IsolationError) as caught:
        await runner.run(spin, timeout=0.5)
    elapsed = time.monotonic() - started
    assert str(caught.value) == "Parsing took longer than 0.5 s and was stopped."
    assert 0.45 < elapsed < 1.5
    await wait_until_gone(pid)
    fresh = await runner.run(worker_pid)
    assert fresh != pid
    assert await runner.run(add, 2, 2) == 4


def process_gone(pid: int) -> bool:
    """True once the process no longer runs (absent, or a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before or while reading
        return True


async def wait_until_gone(pid: int) -> None:
    """Wait (at most 10 s) for a process to end; the OS offers no event for a foreign pid."""
    async with asyncio.timeout(10):
        while not process_gone(pid):
            await asyncio.sleep(0.01)


async def test_worker_dies_with_its_parent(tmp_path: Path) -> None:
    started = tmp_path / "started"
    script = (
        "import asyncio, json, sys\n"
        f"sys.path[:0] = json.loads({json.dumps(json.dumps(sys.path))})\n"
        "from bot.tools.isolate import IsolatedRunner\n"
        "from tests.tools.test_isolate import announce_then_spin\n"
        f"asyncio.run(IsolatedRunner(timeout=60).run(announce_then_spin, {str(started)!r}))\n"
    )
    parent = await asyncio.create_subprocess_exec(sys.executable, "-c", script)
    try:
        async with asyncio.timeout(30):
            while not (started.exists() and started.read_text()):
                await asyncio.sleep(0.01)  # polling a file: the worker has no other way to tell
    finally:
        parent.kill()
        await parent.wait()
    await wait_until_gone(int(started.read_text()))


async def test_memory_hog_hits_the_limit(runner: IsolatedRunner) -> None:
    with pytest.raises(IsolationError) as caught:
        await runner.run(hog)
    assert str(caught.value) == "Parsing ran out of memory (limit 512 MB)."
    assert await runner.run(add, 3, 3) == 6


async def test_crashed_worker_is_replaced(runner: IsolatedRunner) -> None:
    pid = await runner.run(worker_pid)
    with pytest.raises(IsolationError, match=r"Parser crashed: .*exit code 3"):
        await runner.run(die)
    assert await runner.run(worker_pid) != pid


async def test_cancelled_call_does_not_poison_the_worker(
    runner: IsolatedRunner, tmp_path: Path
) -> None:
    pid = await runner.run(worker_pid)
    started = tmp_path / "started"
    task = asyncio.create_task(runner.run(announce_then_spin, str(started), timeout=30))
    async with asyncio.timeout(5):
        while not started.exists():
            await asyncio.sleep(0.005)  # polling a file: the worker has no other way to tell
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await runner.run(add, 4, 4) == 8
    assert await runner.run(worker_pid) != pid


async def test_queued_calls_survive_a_killed_hung_call() -> None:
    runner = IsolatedRunner(workers=1, timeout=0.5, memory_mb=256)
    try:
        hung = asyncio.create_task(runner.run(spin))
        # Their own deadline is generous: a fresh worker first imports this module.
        queued = [asyncio.create_task(runner.run(add, n, n, timeout=30)) for n in range(3)]
        with pytest.raises(IsolationError, match="took longer"):
            await hung
        assert await asyncio.gather(*queued) == [0, 2, 4]
    finally:
        await runner.close()


# --- fairness: hostile documents do not hold up healthy ones --------------------------------


async def announced(paths: list[Path]) -> None:
    """Wait (bounded) until every path was written by a worker that started its call."""
    async with asyncio.timeout(30):
        while not all(path.exists() and path.read_text() for path in paths):
            await asyncio.sleep(0.005)  # polling files: the workers have no other way to tell


async def test_a_healthy_page_is_served_before_three_hostile_ones_end() -> None:
    # FIFO on two workers made the healthy page wait for two deadlines (44.8 s at 15 s each).
    # The deadline is long so that only scheduling decides the order; close() ends them.
    runner = IsolatedRunner(workers=2, timeout=10.0, memory_mb=256, first_slice=0.3)
    try:
        spawning = time.monotonic()
        await asyncio.gather(*(runner.run(import_parsers, timeout=30) for _ in range(2)))
        # What starting two fresh workers costs on this machine right now (more under load).
        spawn = time.monotonic() - spawning
        started = time.monotonic()
        hostile = [asyncio.create_task(runner.run(spin)) for _ in range(3)]
        healthy = asyncio.create_task(runner.run(html_text, "<p>healthy page</p>", timeout=30))
        assert await healthy == "healthy page"
        waited = time.monotonic() - started
        assert not [task for task in hostile if task.done()], "served before any hostile ended"
        # Two slices and two fresh workers (FIFO: at least one 10 s deadline). The bound grows
        # with the measured spawn time on a loaded machine, but stays below that deadline.
        limit = min(9.0, max(6.0, 2 * 0.3 + 3 * spawn))
        assert waited < limit, f"waited {waited:.1f} s (limit {limit:.1f} s, spawn {spawn:.1f} s)"
    finally:
        await runner.close()
    for task in hostile:
        with pytest.raises(IsolationError):
            await task


async def test_a_running_slow_call_yields_to_a_new_one_and_runs_again(tmp_path: Path) -> None:
    # Zero slice: both hostile calls count as slow as soon as they run.
    runner = IsolatedRunner(workers=2, timeout=60, memory_mb=256, first_slice=0)
    try:
        paths = [tmp_path / "first", tmp_path / "second"]
        hostile = [asyncio.create_task(runner.run(announce_then_spin, str(p))) for p in paths]
        await announced(paths)
        pids = [int(path.read_text()) for path in paths]
        for path in paths:
            path.unlink()
        assert await runner.run(add, 20, 22, timeout=30) == 42
        async with asyncio.timeout(30):
            while not any(path.exists() and path.read_text() for path in paths):
                await asyncio.sleep(0.005)  # polling files: the workers have no other way to tell
        (again,) = [index for index, path in enumerate(paths) if path.exists()]
        assert int(paths[again].read_text()) != pids[again], "it runs again on a fresh worker"
        assert not [task for task in hostile if task.done()]
    finally:
        await runner.close()
    for task in hostile:
        with pytest.raises(IsolationError, match="shut down"):
            await task


async def test_one_worker_serves_a_new_call_between_attempts_of_a_slow_one(
    tmp_path: Path,
) -> None:
    # 3 s, not 1: the retry must start a fresh worker and announce within the deadline, and
    # spawning one takes over a second on a loaded 2-core machine.
    runner = IsolatedRunner(workers=1, timeout=3.0, memory_mb=256, first_slice=0)
    try:
        path = tmp_path / "spinning"
        hostile = asyncio.create_task(runner.run(announce_then_spin, str(path)))
        await announced([path])
        first_pid = int(path.read_text())
        path.unlink()
        assert await runner.run(add, 1, 2, timeout=30) == 3
        await announced([path])
        assert int(path.read_text()) != first_pid, "it runs again on a fresh worker"
        # Each attempt has the whole deadline: the second one is stopped by it.
        with pytest.raises(IsolationError, match=r"took longer than 3 s"):
            await hostile
        assert await runner.run(add, 2, 3, timeout=30) == 5
    finally:
        await runner.close()


async def test_waiting_calls_fail_cleanly_when_the_runner_closes(tmp_path: Path) -> None:
    runner = IsolatedRunner(workers=1, timeout=30, memory_mb=256)
    path = tmp_path / "spinning"
    running = asyncio.create_task(runner.run(announce_then_spin, str(path)))
    await announced([path])
    waiting = asyncio.create_task(runner.run(add, 1, 1))
    await asyncio.sleep(0)  # let it queue; the outcome does not depend on it
    await runner.close()
    for task in (running, waiting):
        with pytest.raises(IsolationError, match="shut down"):
            await task


async def test_closed_runner_refuses(runner: IsolatedRunner) -> None:
    await runner.run(add, 1, 1)
    await runner.close()
    with pytest.raises(IsolationError, match="shut down"):
        await runner.run(add, 1, 1)


async def test_event_loop_stays_responsive_during_a_hung_call(runner: IsolatedRunner) -> None:
    await runner.run(add, 0, 0)  # warm: measure the hung call, not the spawn
    async with LagMeter() as meter:
        with pytest.raises(IsolationError):
            await runner.run(spin, timeout=1.0)
    assert meter.ticks > 40
    assert meter.worst < 0.5, f"loop lag {meter.worst * 1000:.0f} ms"


# --- hostile documents -----------------------------------------------------------------------


async def test_pdf_round_trip_through_the_worker(runner: IsolatedRunner) -> None:
    simple = one_page_pdf(zlib.compress(b"BT /F1 24 Tf 72 700 Td (Hello PDF) Tj ET"))
    assert await runner.run(pdf_text, simple) == "Hello PDF"


async def test_pdf_bomb_costs_a_bounded_error(runner: IsolatedRunner) -> None:
    data = bomb_pdf()
    assert len(data) < MB
    started = time.monotonic()
    with pytest.raises(IsolationError) as caught:
        await runner.run(pdf_text, data)
    assert str(caught.value).startswith(("Parser crashed", "Parsing ran out of memory"))
    assert time.monotonic() - started < 5.0
    assert await runner.run(add, 1, 2) == 3


@pytest.mark.parametrize(
    ("parser", "document"),
    [(pdf_text, slow_pdf), (html_text, nested_html)],
    ids=["slow-pdf", "nested-html"],
)
async def test_hostile_document_stops_at_the_deadline_while_another_turn_completes(
    parser: Callable[..., str], document: Callable[[], bytes | str]
) -> None:
    hostile = document()
    # Memory is generous here so that the deadline, not the memory cap, is what stops the parse
    # (the slow PDF can also exhaust 768 MB, which test_pdf_bomb_costs_a_bounded_error covers).
    runner = IsolatedRunner(workers=2, timeout=1.0, memory_mb=3072)
    try:
        # Both workers warm, parsers imported: the deadline then measures parsing alone.
        await asyncio.gather(
            runner.run(import_parsers, timeout=30), runner.run(import_parsers, timeout=30)
        )
        async with (
            FakeWebServer() as web,
            SafeFetcher(FetchPolicy.allowing("127.0.0.1/32"), timeout=5) as fetcher,
        ):
            web.add_page("/turn", "<p>another turn</p>")
            async with LagMeter() as meter:
                started = time.monotonic()
                parse = asyncio.create_task(runner.run(parser, hostile))
                # Another turn meanwhile: a fetch and a parse on the second worker.
                page = await fetcher.fetch(web.url_for("/turn"))
                other = await runner.run(html_text, page.body.decode(), timeout=30)
                assert not parse.done()
                with pytest.raises(IsolationError, match=r"took longer than 1 s"):
                    await parse
                elapsed = time.monotonic() - started
        assert other == "another turn"
        assert elapsed < 2.0
        assert meter.worst < 0.5, f"loop lag {meter.worst * 1000:.0f} ms"
        # Its own deadline is generous: the killed worker's successor first imports this module,
        # which can take over the runner's 1 s on a loaded machine.
        assert await runner.run(add, 5, 5, timeout=30) == 10
    finally:
        await runner.close()
