"""Discord turn latency (cold and warm), bot CPU per reply, and 200 threads at once, vs fakes.

The real PlayChatBot (discord.py client, engine, SQLite) runs in this process's event loop;
the loopback Discord and the loopback LLM run in a child process (driven over a small control
HTTP API), so the event-loop lag and CPU measured here are the bot's alone. The LLM streams
`--tokens` tokens at `--rate` tokens/s; the fake Discord enforces the 5-per-5-s message bucket
per channel, so any 429 the bot provokes is counted. Times are CLOCK_MONOTONIC in both
processes (system-wide on Linux).

Start-up to ready is this process's age (interpreter start included) when it has imported
the standard library and aiohttp, plus the time from the fakes being up to the bot being
ready: the bot's imports, services, warm-up and Discord connection, in the composition root's
order (`bot.ops.startup`: the analysis worker is spawned first). Only the wait for the fakes
process is left out; nothing of the bot starts before it ends.

The first turn is the first conversation after start (cold); the others are warm. "First
reply" is the first message the bot posts in the thread: the first visible text. CPU is this
process's (all threads), so it includes background work such as tagging, less the thread the
bench's own control requests run on.

Run: .venv/bin/python bench/discord_turn.py [--turns 20] [--threads 200] [--tokens 60]
Prints one JSON object, then a one-line summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp

if TYPE_CHECKING:
    from bot.bot import PlayChatBot
    from bot.config import Settings
    from bot.memory.japanese import JapaneseAnalyzer
    from bot.services import ServiceOptions, Services
    from tests.fakes.discord_server import FakeDiscord
    from tests.fakes.llm_server import RecordedRequest

WAIT = 120.0


def process_age() -> float:
    """Seconds since this process started (interpreter start-up included)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started


# Process start → here (interpreter, the standard library, aiohttp): the first part of
# start-up to ready. The bot's own modules are imported later, in the measured part
# (`running_bot`), as `python -m bot` imports them after its analysis worker is spawned.
PRELUDE_S = process_age()


def rss_mib(pid: int | str = "self") -> float:
    """Resident set size of a process in MiB (0 if it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((line for line in status.splitlines() if line.startswith("VmRSS:")), "0 0")
    return int(line.split()[1]) / 1024


def cpu_s(pid: int | None) -> float:
    """CPU seconds (user + system) of another process, e.g. the analysis worker (0 if none)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def answer_text(index: int, tokens: int) -> str:
    """A deterministic answer of `tokens` word tokens (about 7 characters each)."""
    return " ".join(f"w{index}x{n}" for n in range(tokens))


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[rank]


# --------------------------------------------------------------------------- the fakes process


class FinalTexts:
    """Waits for the bot's final text in many threads with one watcher in the fakes process.

    A waiter per thread re-checks on every change of the fake's state, so with 200 threads
    each REST call woke 200 tasks: ~1.5 s of CPU per 200 turns, on the cores the bot under
    measure shares. The watcher looks only at the threads the calls since its last look
    touched (a call still being answered is looked at again)."""

    def __init__(self, server: FakeDiscord) -> None:
        self._server = server
        self._pending: dict[str, tuple[str, asyncio.Future[float]]] = {}
        self._scanned = 0  # calls before this index are answered and looked at

    def expect(self, thread_id: int, text: str) -> asyncio.Future[float]:
        """A future for when `text` is the bot's last message in the thread (monotonic s)."""
        done = asyncio.get_running_loop().create_future()
        self._pending[str(thread_id)] = (text, done)
        self._look(str(thread_id))
        return done

    def _look(self, thread_id: str) -> None:
        text, done = self._pending[thread_id]
        bot_id = self._server.bot_user.id
        mine = [m for m in self._server.messages_in(int(thread_id)) if m.author.id == bot_id]
        if mine and mine[-1].content == text:
            del self._pending[thread_id]
            done.set_result(time.monotonic())

    def _sweep(self) -> bool:
        calls = self._server.calls
        start = self._scanned
        while self._scanned < len(calls) and calls[self._scanned].status:
            self._scanned += 1
        for call in calls[start:]:
            parts = call.path.split("/", 3)  # "", "channels", id, rest
            if len(parts) > 2 and parts[2] in self._pending:
                self._look(parts[2])
        return False

    async def watch(self) -> None:
        """Look after every change of the fake's state, until cancelled."""
        while True:
            try:
                await self._server.wait_for(self._sweep, WAIT)
            except TimeoutError:
                continue


async def serve_fakes(tokens: int, rate: float) -> None:
    """Child process: FakeDiscord + FakeLLMServer + a control API; runs until stdin closes."""
    from aiohttp import web

    from tests.fakes.discord_server import FakeDiscord
    from tests.fakes.llm_server import FakeLLMServer, Text

    discord_server = FakeDiscord()
    await discord_server.start()
    discord_server.enable_rate_limit(5, 5.0)
    llm = FakeLLMServer(models=("bench-model",))

    def reply(request: RecordedRequest) -> Text:
        question = str(request.messages[-1].get("content", ""))
        last = question.rsplit(" ", 1)[-1]
        index = int(last) if last.isdigit() else 0  # summaries and the like: any answer
        return Text(answer_text(index, tokens), chunks=tokens, delay=1.0 / rate)

    llm.default_reply = reply
    await llm.start()
    users = {0: discord_server.user}
    finals = FinalTexts(discord_server)
    watcher = asyncio.create_task(finals.watch())

    async def info(_: web.Request) -> web.Response:
        return web.json_response(
            {
                "api_url": discord_server.api_url,
                "gateway_url": discord_server.gateway_url,
                "token": discord_server.token,
                "guild_id": discord_server.guild_id,
                "llm_url": llm.url,
            }
        )

    async def add_users(request: web.Request) -> web.Response:
        count = int((await request.json())["count"])
        for _ in range(count):
            users[len(users)] = discord_server.add_user(f"user{len(users)}")
        return web.json_response({"users": len(users)})

    async def inject(request: web.Request) -> web.Response:
        body = await request.json()
        at = time.monotonic()
        message = await discord_server.inject_message(
            f"question {body['index']}", author=users[int(body.get("user", 0))]
        )
        return web.json_response({"id": str(message.id), "at": at})

    async def wait(request: web.Request) -> web.Response:
        body = await request.json()
        thread_id, text = int(body["thread_id"]), str(body["text"])
        done = await asyncio.wait_for(finals.expect(thread_id, text), WAIT)
        calls = [
            {"method": c.method, "path": c.path, "status": c.status, "at": c.at}
            for c in discord_server.calls
            if str(thread_id) in c.path
        ]
        # The last answer streamed: this turn's, when turns run one at a time.
        ended = llm.streams_ended[-1] if llm.streams_ended else done
        return web.json_response({"done": done, "stream_end": ended, "calls": calls})

    app = web.Application()
    app.router.add_get("/info", info)
    app.router.add_post("/users", add_users)
    app.router.add_post("/inject", inject)
    app.router.add_post("/wait", wait)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(runner.addresses[0][1], flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes our stdin
    watcher.cancel()
    await runner.cleanup()
    await llm.close()
    await discord_server.close()


# --------------------------------------------------------------------------- the bot process


class LagMonitor:
    """Measures how late a 10 ms timer fires on the bot's loop."""

    def __init__(self, period: float = 0.01) -> None:
        self.period = period
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start = loop.time()
            await asyncio.sleep(self.period)
            self.lags.append(max(0.0, loop.time() - start - self.period))

    def start(self) -> None:
        """Begin sampling."""
        self.lags.clear()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Stop sampling."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class Control:
    """Client of the fakes process's control API."""

    def __init__(self, http: aiohttp.ClientSession, port: int) -> None:
        self.http = http
        self.base = f"http://127.0.0.1:{port}"

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """One control request; its JSON answer."""
        async with self.http.request(method, self.base + path, json=body) as resp:
            resp.raise_for_status()
            return await resp.json()


class Caller(Protocol):
    """Anything that makes control requests (`Control`, `ControlThread`)."""

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """One control request; its JSON answer."""


class ControlThread:
    """The control API's client on a thread (and event loop) of its own.

    The bench's own requests (two per turn) are not the bot's work: on their own thread their
    CPU is counted apart (`cpu_s`) and taken out of the bot's CPU figures.
    """

    def __init__(self, port: int) -> None:
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="bench-control")
        self._control: Control | None = None

    async def __aenter__(self) -> ControlThread:
        self._thread.start()
        self._control = await self._run(self._open())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._run(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        await asyncio.to_thread(self._thread.join)
        self._loop.close()

    async def _open(self) -> Control:
        # No connection limit: each turn's /wait holds a connection until the reply is done,
        # and aiohttp's default 100 held back the injection of turns 101-200 (the bench, not
        # the bot, then set the pace of 200 threads at once).
        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        return Control(http, self._port)

    async def _close(self) -> None:
        assert self._control is not None
        await self._control.http.close()

    async def _run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """One control request (made on the control thread); its JSON answer."""
        assert self._control is not None
        return await self._run(self._control.call(method, path, body))

    def cpu_s(self) -> float:
        """CPU seconds the control thread has used."""
        assert self._thread.ident is not None
        return time.clock_gettime(time.pthread_getcpuclockid(self._thread.ident))


async def one_turn(control: Caller, index: int, tokens: int, user: int = 0) -> dict[str, Any]:
    """Inject a mention, wait for the final reply; timings and REST calls of that reply."""
    sent = await control.call("POST", "/inject", {"index": index, "user": user})
    thread_id = sent["id"]
    waited = await control.call(
        "POST", "/wait", {"thread_id": thread_id, "text": answer_text(index, tokens)}
    )
    calls = waited["calls"]
    first_post = next(
        c["at"]
        for c in calls
        if c["method"] == "POST" and c["path"] == f"/channels/{thread_id}/messages"
    )
    writes = [c for c in calls if c["method"] in ("POST", "PATCH") and "/messages" in c["path"]]
    return {
        "first_reply_ms": (first_post - sent["at"]) * 1000,
        "turn_s": waited["done"] - sent["at"],
        "final_after_stream_ms": (waited["done"] - waited["stream_end"]) * 1000,
        "rest_calls": len(calls),
        "writes": len(writes) - 1,  # minus the thread creation (POST .../messages/{id}/threads)
        "status_429": sum(1 for c in calls if c["status"] == 429),
    }


async def start_bot(bot: PlayChatBot, info: dict[str, Any]) -> asyncio.Task[None]:
    """Point discord.py at the fake and start the client; returns its task once ready."""
    import yarl
    from discord.gateway import DiscordWebSocket
    from discord.http import Route

    Route.BASE = info["api_url"]
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(info["gateway_url"])
    bot._connection.guild_ready_timeout = 0.05
    task = asyncio.create_task(bot.start(info["token"]))
    await asyncio.sleep(0)
    await asyncio.wait_for(bot.wait_until_ready(), 30)
    return task


@dataclass
class Harness:
    """The running bot (in this process) and the control API of the fakes (child process)."""

    control: ControlThread
    services: Services
    bot: PlayChatBot
    # Process start → bot ready, less the wait for the fakes process (nothing of the bot runs
    # then): interpreter and aiohttp, then the bot's imports, services, warm-up and connect.
    ready_s: float
    # CPU seconds used by then: this process (all threads, interpreter start included) and the
    # analysis worker (its own process, on the other core while this one imports).
    cpu_at_ready_s: float
    worker_cpu_at_ready_s: float
    rss_at_ready_mib: float  # this process (the bot and the bench's client), right after ready
    fakes_pid: int  # the child process serving the loopback Discord and LLM


def bench_options() -> ServiceOptions:
    """The services' options here: one attempt per LLM call, no built-in web tools."""
    from bot.llm.gateway import RetryPolicy
    from bot.services import ServiceOptions

    return ServiceOptions(retry=RetryPolicy(attempts=1), builtin_tools=False)


def bench_services(
    settings: Settings,
) -> Callable[[JapaneseAnalyzer], AbstractAsyncContextManager[Services]]:
    """How the services open here over the spawned worker (imported only then, as
    `bot/__main__.py` does, so that the worker's start overlaps the import)."""

    def opener(analyzer: JapaneseAnalyzer) -> AbstractAsyncContextManager[Services]:
        from bot.services import open_services

        return open_services(settings, bench_options(), analyzer=analyzer)

    return opener


def import_bot() -> None:
    """The Discord client's modules (as `python -m bot` preloads them)."""
    import bot.bot  # noqa: F401


@asynccontextmanager
async def running_bot(args: argparse.Namespace) -> AsyncIterator[Harness]:
    """Spawn the fakes, open the services and start the bot; tear everything down after."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve-fakes",
        "--tokens",
        str(args.tokens),
        "--rate",
        str(args.rate),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdin is not None
    port = int((await asyncio.wait_for(child.stdout.readline(), 60)).decode())
    scratch = tempfile.TemporaryDirectory(prefix="playchat-bench-")
    tmp = Path(scratch.name)
    try:
        async with ControlThread(port) as control:
            info = await control.call("GET", "/info")
            began = time.monotonic()
            from bot.config import Settings

            settings = Settings(  # type: ignore[call-arg]
                _env_file=None,
                db_path=tmp / "bench.db",
                kb_dir=tmp / "kb",
                language="en",
                llm_model="ollama/bench-model",
                llm_api_base=info["llm_url"],
                discord_guild_ids=[info["guild_id"]],
                user_cooldown_seconds=0.0,
                stream_edit_interval=args.interval,
            )
            # As the composition root (bot/__main__.py run_bot) starts: bot.ops.startup.
            from bot.ops.startup import started_services

            opener = bench_services(settings)
            async with started_services(opener, preload=import_bot) as services:
                from bot.bot import BotDeps, PlayChatBot

                bot = PlayChatBot(BotDeps(services))
                client = await start_bot(bot, info)
                ready_s = time.monotonic() - began + PRELUDE_S
                cpu_at_ready = time.process_time() - control.cpu_s()
                worker_cpu = cpu_s(services.analyzer.worker_pid)
                try:
                    yield Harness(
                        control,
                        services,
                        bot,
                        ready_s,
                        cpu_at_ready,
                        worker_cpu,
                        rss_mib(),
                        child.pid,
                    )
                    await services.tasks.drain()
                finally:
                    await bot.close()
                    await asyncio.gather(client, return_exceptions=True)
    finally:
        child.stdin.close()
        await asyncio.wait_for(child.wait(), 30)
        scratch.cleanup()


async def main(args: argparse.Namespace) -> dict[str, Any]:
    """Cold turn, warm turns, then many threads at once; returns the JSON result."""
    from bot.runtime import event_loop

    async with running_bot(args) as harness:
        control = harness.control

        def bot_cpu() -> float:
            """This process's CPU seconds, less the bench's control thread's."""
            return time.process_time() - control.cpu_s()

        cpu = bot_cpu()
        cold = await one_turn(control, 0, args.tokens)
        cold_cpu_ms = (bot_cpu() - cpu) * 1000
        worker = getattr(harness.services.analyzer, "worker_pid", None)
        cpu, worker_cpu = bot_cpu(), cpu_s(worker)
        warm = [await one_turn(control, i, args.tokens) for i in range(1, args.turns)]
        await harness.services.tasks.drain()
        warm_cpu_ms = (bot_cpu() - cpu) * 1000 / max(1, len(warm))
        worker_cpu_ms = (cpu_s(worker) - worker_cpu) * 1000 / max(1, len(warm))
        worker_rss_mib = rss_mib(worker) if worker else 0.0
        if args.threads:
            await control.call("POST", "/users", {"count": args.threads})
        monitor = LagMonitor()
        monitor.start()
        cpu, fakes_cpu = bot_cpu(), cpu_s(harness.fakes_pid)
        worker_cpu = cpu_s(worker)
        began = time.monotonic()
        concurrent = await asyncio.gather(
            *(one_turn(control, 1000 + i, args.tokens, user=i + 1) for i in range(args.threads))
        )
        wall = time.monotonic() - began
        cpu = bot_cpu() - cpu
        fakes_cpu = cpu_s(harness.fakes_pid) - fakes_cpu
        worker_cpu = cpu_s(worker) - worker_cpu
        await monitor.stop()
    sequential = [cold, *warm]
    first = [t["first_reply_ms"] for t in warm]
    return {
        "event_loop": event_loop.loop_name(asyncio.get_running_loop()),
        "tokens_per_reply": args.tokens,
        "token_rate_per_s": args.rate,
        "stream_edit_interval_s": args.interval,
        "startup_to_ready_s": round(harness.ready_s, 3),
        "startup_cpu_s": round(harness.cpu_at_ready_s, 3),
        "analysis_worker_startup_cpu_s": round(harness.worker_cpu_at_ready_s, 3),
        "rss_at_ready_mib": round(harness.rss_at_ready_mib, 1),
        "analysis_worker_rss_mib": round(worker_rss_mib, 1),
        "cold_first_reply_ms": round(cold["first_reply_ms"], 1),
        "cold_cpu_ms": round(cold_cpu_ms, 1),
        "sequential_turns": args.turns,
        "first_reply_ms_p50": round(percentile(first, 0.5), 1),
        "first_reply_ms_p99": round(percentile(first, 0.99), 1),
        "final_text_after_stream_end_ms_p50": round(
            percentile([t["final_after_stream_ms"] for t in warm], 0.5), 1
        ),
        "cpu_ms_per_reply": round(warm_cpu_ms, 1),
        "analysis_worker_cpu_ms_per_reply": round(worker_cpu_ms, 1),
        "rest_calls_per_reply_mean": round(statistics.mean(t["rest_calls"] for t in sequential), 2),
        "message_writes_per_reply_mean": round(statistics.mean(t["writes"] for t in sequential), 2),
        "concurrent_threads": args.threads,
        "concurrent_wall_s": round(wall, 2),
        "turns_per_s": round(args.threads / wall, 2) if args.threads else 0.0,
        "bot_cpu_s_concurrent": round(cpu, 2),
        "cpu_ms_per_turn_concurrent": round(cpu * 1000 / max(1, args.threads), 1),
        "analysis_worker_cpu_ms_per_turn_concurrent": round(
            worker_cpu * 1000 / max(1, args.threads), 1
        ),
        "fakes_cpu_s_concurrent": round(fakes_cpu, 2),
        "loop_lag_ms_p50": round(percentile(monitor.lags, 0.5) * 1000, 2),
        "loop_lag_ms_p99": round(percentile(monitor.lags, 0.99) * 1000, 2),
        "loop_lag_ms_max": round(max(monitor.lags, default=0.0) * 1000, 2),
        "concurrent_first_reply_ms_p50": round(
            percentile([t["first_reply_ms"] for t in concurrent], 0.5), 1
        ),
        "concurrent_first_reply_ms_p99": round(
            percentile([t["first_reply_ms"] for t in concurrent], 0.99), 1
        ),
        "status_429": sum(t["status_429"] for t in [*sequential, *concurrent]),
    }


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=20, help="sequential turns (latency)")
    parser.add_argument(
        "--threads", type=int, default=200, help="threads at once (0: no concurrent part)"
    )
    parser.add_argument("--tokens", type=int, default=60, help="tokens per answer")
    parser.add_argument("--rate", type=float, default=50.0, help="LLM tokens per second")
    parser.add_argument("--interval", type=float, default=1.2, help="stream_edit_interval")
    parser.add_argument(
        "--event-loop",
        choices=("auto", "uvloop", "asyncio"),
        default="auto",
        help="the bot's event loop (auto: as python -m bot picks it)",
    )
    parser.add_argument("--serve-fakes", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _args()
    if arguments.serve_fakes:
        asyncio.run(serve_fakes(arguments.tokens, arguments.rate))
        sys.exit(0)
    from bot.runtime import event_loop

    result = event_loop.run(main(arguments), arguments.event_loop)
    print(json.dumps(result))
    print(
        f"{result['event_loop']} loop: ready {result['startup_to_ready_s']} s "
        f"(<= 1.5; CPU {result['startup_cpu_s']} s "
        f"+ {result['analysis_worker_startup_cpu_s']} s in the analysis worker); "
        f"first visible text: cold {result['cold_first_reply_ms']} ms (<= 50), "
        f"warm p50 {result['first_reply_ms_p50']} ms / p99 {result['first_reply_ms_p99']} ms; "
        f"final text {result['final_text_after_stream_end_ms_p50']} ms after the stream ends; "
        f"bot CPU {result['cpu_ms_per_reply']} ms per warm reply (<= 25) "
        f"+ {result['analysis_worker_cpu_ms_per_reply']} ms in the analysis worker; "
        f"RSS at ready {result['rss_at_ready_mib']} MiB "
        f"(+ worker {result['analysis_worker_rss_mib']} MiB); "
        f"{result['rest_calls_per_reply_mean']} REST calls per reply; "
        f"{result['concurrent_threads']} threads at once: {result['turns_per_s']} turns/s, "
        f"loop lag p50 {result['loop_lag_ms_p50']} / p99 {result['loop_lag_ms_p99']} ms "
        f"(<= 50), {result['cpu_ms_per_turn_concurrent']} ms CPU per turn; "
        f"429s: {result['status_429']}"
    )
