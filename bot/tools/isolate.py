"""Run parsers of untrusted content in worker processes with a deadline and a memory cap.

Workers are fresh interpreters (spawned with exec, never forked: the parent has threads and an
event loop; unlike multiprocessing's spawn they do not re-import the parent's __main__), kept
warm between calls, and killed outright when a call overruns its deadline. A call's deadline
starts when a worker takes it, and a killed call only loses its own worker, so queued calls run
on the fresh replacement. Calls beyond the number of workers wait, new ones first: a call still
running after its first slice yields its worker to a waiting new call when slow calls already
hold all workers but one, and runs again (with its whole deadline) when none is waiting, so a
few hostile documents cannot hold up everyone else's pages for a deadline each.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import os
import pickle
import resource
import signal
import socket
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from bot.errors import UserFacingError

log = logging.getLogger(__name__)

T = TypeVar("T")

# Frame: 8-byte length, then a one-byte reply kind (replies only), then a pickle.
_HEADER: Final = struct.Struct("!Q")
_STREAM_LIMIT: Final = 1024 * 1024
_JOIN_TIMEOUT: Final = 5.0
PARSE_TIMEOUT: Final = 15.0
# Seconds a call runs before it counts as slow and may have to yield its worker (healthy pages
# parse in well under a second; trafilatura needs about 2 s for a 200 KB article).
FIRST_SLICE: Final = 2.0
_BOOTSTRAP: Final = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv[4]); "
    "from bot.tools.isolate import worker_entry; "
    "worker_entry(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))"
)
_PR_SET_PDEATHSIG: Final = 1

_WORKER_ENV: Final = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "HOME"})

_OK: Final = b"o"  # pickle of the result
_RAISED: Final = b"r"  # pickle of the exception
_FAILED: Final = b"f"  # UTF-8 text: the exception could not cross the process boundary
_OUT_OF_MEMORY: Final = b"m"  # empty; the worker exits after sending it


class IsolationError(UserFacingError):
    """Parsing in the worker failed: deadline, memory limit or a crash; the text says which."""


# --- worker side (runs in the child process) ---------------------------------------------------


def _recv_exactly(sock: socket.socket, size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), _STREAM_LIMIT))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _outcome(payload: bytes) -> tuple[bytes, bytes]:
    """Run one pickled call and return (kind, body); never raises."""
    try:
        func, args = pickle.loads(payload)  # noqa: S301 - written by our own parent process
    except Exception as exc:
        return _FAILED, f"the call could not be loaded ({type(exc).__name__}: {exc})".encode()
    try:
        result = func(*args)
        return _OK, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        return _OUT_OF_MEMORY, b""
    except BaseException as exc:
        text = f"{type(exc).__name__}: {exc}"
        data = _pickled_exception(exc) if isinstance(exc, Exception) else None
        if data is not None:
            return _RAISED, data
        return _FAILED, text.encode("utf-8", "replace")


def _pickled_exception(exc: Exception) -> bytes | None:
    """The exception pickled, or None if it would not survive the trip to the parent."""
    try:
        data = pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(data)  # noqa: S301 - our own bytes; some exceptions pickle but cannot be rebuilt
    except Exception:
        return None
    return data


def _die_with_parent(parent_pid: int) -> None:
    """Linux: get SIGKILLed when the parent dies, so a worker stuck in a parse never outlives it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def worker_entry(fd: int, memory_bytes: int, parent_pid: int) -> None:
    """Worker process main: receive a pickled (func, args), run it, reply; exit on EOF."""
    _die_with_parent(parent_pid)
    sock = socket.socket(fileno=fd)
    # Ctrl-C in a terminal reaches the whole process group; the parent decides, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:
        memory_bytes = min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    sock.setblocking(True)
    with sock:
        while True:
            header = _recv_exactly(sock, _HEADER.size)
            payload = None if header is None else _recv_exactly(sock, _HEADER.unpack(header)[0])
            if payload is None:
                return
            kind, body = _outcome(payload)
            sock.sendall(_HEADER.pack(len(body) + 1) + kind + body)
            if kind == _OUT_OF_MEMORY:
                return  # after a MemoryError the heap is suspect: a fresh worker takes over


# --- parent side ------------------------------------------------------------------------------


@dataclass(eq=False)
class _Worker:
    process: asyncio.subprocess.Process
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


class _Preempted(Exception):
    """The call's worker was taken back for a newer call; the call runs again later."""


@dataclass(eq=False)
class _Call:
    """One call of run(), waiting for a worker or holding one."""

    seq: int
    name: str
    # A call that ran past its first slice, or that was preempted and waits to run again.
    slow: bool = False
    attempts: int = 0
    preempted: bool = False
    started: float = 0.0
    worker: _Worker | None = None
    granted: asyncio.Future[_Worker | None] | None = None
    slice_timer: asyncio.TimerHandle | None = None


class IsolatedRunner:
    """Runs picklable top-level functions in worker processes with a deadline and a memory cap."""

    def __init__(
        self,
        *,
        workers: int = 2,
        timeout: float | None = None,
        memory_mb: int = 768,
        first_slice: float = FIRST_SLICE,
    ) -> None:
        timeout = PARSE_TIMEOUT if timeout is None else timeout
        if workers < 1 or timeout <= 0 or memory_mb < 64 or first_slice < 0:
            raise ValueError(
                "workers >= 1, timeout > 0, memory_mb >= 64 and first_slice >= 0 are required"
            )
        self._workers = workers
        self._timeout = timeout
        self._memory_mb = memory_mb
        self._first_slice = first_slice
        # One token per worker slot; None means "no live process yet, spawn on demand".
        self._idle: list[_Worker | None] = [None] * workers
        self._fresh: collections.deque[_Call] = collections.deque()
        self._again: list[_Call] = []  # preempted calls, oldest first
        self._running: set[_Call] = set()
        self._sequence = itertools.count()
        self._live: set[_Worker] = set()
        self._reaping: set[asyncio.Task[None]] = set()
        self._closed = False

    async def run(
        self,
        func: Callable[..., T],
        /,
        *args: Any,
        timeout: float | None = None,  # noqa: ASYNC109 - the deadline must kill the worker
    ) -> T:
        """Call func(*args) in a worker; re-raise its exception, IsolationError on failure."""
        if self._closed:
            raise IsolationError("The parser is shut down.")
        if getattr(func, "__module__", None) == "__main__":
            raise TypeError(f"{_name(func)} must live in an importable module, not in __main__")
        try:
            payload = pickle.dumps((func, args), protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise TypeError(f"{_name(func)} and its arguments must be picklable: {exc}") from exc
        limit = self._timeout if timeout is None else timeout
        call = _Call(next(self._sequence), _name(func))
        while True:
            worker = await self._acquire(call)
            try:
                if self._closed:
                    raise IsolationError("The parser is shut down.")
                if worker is None:
                    worker = await self._spawn()
                kind, body = await self._attempt(call, worker, payload, limit)
            except _Preempted:
                log.info("parser call %s yielded its worker to a newer call", call.name)
                continue
            finally:
                # A worker discarded during the call leaves an empty slot behind.
                self._release(worker if worker in self._live else None)
            break
        if kind == _OUT_OF_MEMORY:
            raise IsolationError(f"Parsing ran out of memory (limit {self._memory_mb} MB).")
        if kind == _FAILED:
            raise IsolationError(f"Parser crashed: {body.decode('utf-8', 'replace')}")
        try:
            # Only our worker writes here. A worker taken over by a parser exploit could send a
            # hostile pickle, but it already runs as our user: unpickling grants it nothing new.
            value = pickle.loads(body)  # noqa: S301
        except Exception as exc:
            raise IsolationError(f"Parser crashed: its result could not be read ({exc}).") from None
        if kind == _RAISED:
            raise value
        result: T = value
        return result

    async def close(self) -> None:
        """Stop every worker; calls still running or waiting fail with IsolationError."""
        self._closed = True
        for call in [*self._fresh, *self._again]:
            if call.granted is not None and not call.granted.done():
                call.granted.set_exception(IsolationError("The parser is shut down."))
        self._fresh.clear()
        self._again.clear()
        for worker in list(self._live):
            self._discard(worker)
        if self._reaping:
            await asyncio.gather(*self._reaping, return_exceptions=True)

    # --- scheduling: fresh calls first; slow calls yield a worker to them ----------------------
    #
    # Every call first runs as "fresh". One that is still running after `first_slice` seconds
    # is "slow". While fresh calls wait for a worker, slow calls may hold at most workers - 1
    # of them: the most recently started slow call is stopped (its worker killed) and runs
    # again, with its whole deadline, once no fresh call is waiting. So a healthy page waits
    # about one slice per hostile document ahead of it, not one deadline each.

    async def _acquire(self, call: _Call) -> _Worker | None:
        """Wait for a worker slot; fresh calls are served before calls that run again."""
        if self._closed:
            raise IsolationError("The parser is shut down.")
        granted: asyncio.Future[_Worker | None] = asyncio.get_running_loop().create_future()
        call.granted = granted
        if call.slow:
            self._again.append(call)
            self._again.sort(key=lambda waiting: waiting.seq)
        else:
            self._fresh.append(call)
        self._dispatch()
        self._rebalance()
        try:
            return await granted
        except BaseException:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                self._release(granted.result())  # granted, but the caller went away
            else:
                self._forget(call)
            raise

    def _forget(self, call: _Call) -> None:
        """Take a call that no longer waits off the queues."""
        with contextlib.suppress(ValueError):
            self._fresh.remove(call)
        with contextlib.suppress(ValueError):
            self._again.remove(call)

    def _release(self, worker: _Worker | None) -> None:
        """Return a worker slot and hand it to the next waiting call."""
        self._idle.append(worker)
        self._dispatch()

    def _dispatch(self) -> None:
        """Give idle slots to waiting calls: fresh ones first, then those that run again."""
        while self._idle and (self._fresh or self._again):
            call = self._fresh.popleft() if self._fresh else self._again.pop(0)
            if call.granted is None or call.granted.done():
                continue  # its caller was cancelled while it waited
            call.granted.set_result(self._idle.pop())

    def _rebalance(self) -> None:
        """Stop slow calls while fresh calls wait and slow ones hold more than workers - 1."""
        waiting = sum(1 for call in self._fresh if call.granted and not call.granted.done())
        if not waiting or self._idle:
            return
        slow = [call for call in self._running if call.slow and not call.preempted]
        freeing = sum(1 for call in self._running if call.preempted)
        excess = min(len(slow) - (self._workers - 1), waiting - freeing)
        # Prefer calls on their first attempt, and among them the one that started last.
        slow.sort(key=lambda call: (call.attempts == 1, call.started), reverse=True)
        for call in slow[: max(0, excess)]:
            call.preempted = True
            if call.worker is not None:
                self._discard(call.worker)

    def _turn_slow(self, call: _Call) -> None:
        if call in self._running:
            call.slow = True
            self._rebalance()

    async def _attempt(
        self, call: _Call, worker: _Worker, payload: bytes, limit: float
    ) -> tuple[bytes, bytes]:
        """One run of a call on a worker, registered with the scheduler while it lasts."""
        loop = asyncio.get_running_loop()
        call.attempts += 1
        call.preempted = False
        call.worker = worker
        call.started = loop.time()
        if not call.slow:
            call.slice_timer = loop.call_later(self._first_slice, self._turn_slow, call)
        self._running.add(call)
        try:
            return await self._exchange(worker, payload, limit, call)
        finally:
            self._running.discard(call)
            call.worker = None
            if call.slice_timer is not None:
                call.slice_timer.cancel()
                call.slice_timer = None
            if call.preempted:
                call.slow = True

    async def _exchange(
        self, worker: _Worker, payload: bytes, limit: float, call: _Call
    ) -> tuple[bytes, bytes]:
        """Send one call and read its reply; on any failure the worker is discarded."""
        try:
            async with asyncio.timeout(limit):
                worker.writer.write(_HEADER.pack(len(payload)) + payload)
                await worker.writer.drain()
                size = _HEADER.unpack(await worker.reader.readexactly(_HEADER.size))[0]
                if not 1 <= size <= self._memory_mb * 1024 * 1024:
                    raise IsolationError("Parser crashed: it sent a malformed reply.")
                reply = await worker.reader.readexactly(size)
        except TimeoutError:
            self._discard(worker)
            log.warning("parser call %s overran %.1f s; worker killed", call.name, limit)
            raise IsolationError(f"Parsing took longer than {limit:g} s and was stopped.") from None
        except (OSError, EOFError):
            if call.preempted and not self._closed:
                raise _Preempted from None
            raise await self._crash_error(worker) from None
        except BaseException:
            # Cancelled mid-call (or a bad reply): the worker may still be busy, never reuse it.
            self._discard(worker)
            raise
        kind, body = reply[:1], reply[1:]
        if kind == _OUT_OF_MEMORY:
            self._discard(worker)  # it is exiting by itself; this reaps it
        return kind, body

    async def _spawn(self) -> _Worker:
        parent_sock, child_sock = socket.socketpair()
        paths = json.dumps([path for path in sys.path if isinstance(path, str)])
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _BOOTSTRAP,
                str(child_sock.fileno()),
                str(self._memory_mb * 1024 * 1024),
                str(os.getpid()),
                paths,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,  # a chatty parser must not write into a TTY chat
                pass_fds=(child_sock.fileno(),),
                env=_worker_environment(),
            )
        except OSError as exc:
            parent_sock.close()
            log.error("cannot start a parser worker: %s", exc)
            reason = exc.strerror or str(exc)
            raise IsolationError(f"The parser could not be started ({reason}).") from None
        except BaseException:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
        try:
            reader, writer = await asyncio.open_connection(sock=parent_sock, limit=_STREAM_LIMIT)
        except BaseException:
            parent_sock.close()
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            raise
        worker = _Worker(process, reader, writer)
        self._live.add(worker)
        log.debug("parser worker %s started", process.pid)
        return worker

    def _discard(self, worker: _Worker) -> None:
        """Kill a worker now and reap it in the background."""
        self._live.discard(worker)
        worker.writer.close()
        if worker.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
        task = asyncio.create_task(self._reap(worker))
        self._reaping.add(task)
        task.add_done_callback(self._reaping.discard)

    async def _reap(self, worker: _Worker) -> None:
        try:
            await asyncio.wait_for(worker.process.wait(), _JOIN_TIMEOUT)
        except TimeoutError:
            log.error("parser worker %s did not exit after SIGKILL", worker.process.pid)

    async def _crash_error(self, worker: _Worker) -> IsolationError:
        """Reap a worker whose connection broke and describe how it died."""
        self._live.discard(worker)
        worker.writer.close()
        try:
            await asyncio.wait_for(worker.process.wait(), _JOIN_TIMEOUT)
        except TimeoutError:
            self._discard(worker)
        if self._closed:
            return IsolationError("The parser was shut down during the call.")
        code = worker.process.returncode
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exit code {code}"
        log.warning("parser worker %s died (%s)", worker.process.pid, how)
        return IsolationError(f"Parser crashed: the worker process died ({how}).")


def _worker_environment() -> dict[str, str]:
    """The parent's environment minus everything but locale and Python settings.

    Workers parse hostile input with C libraries; they have no use for API keys or tokens.
    """
    return {
        name: value
        for name, value in os.environ.items()
        if name in _WORKER_ENV or name.startswith(("LC_", "PYTHON"))
    }


def _name(func: Callable[..., Any]) -> str:
    return str(getattr(func, "__qualname__", repr(func)))
