"""Start-up order of `python -m bot`: the analysis worker is spawned before the heavy imports
(it loads on the other core meanwhile), one worker serves the bot, and nothing no turn needs
is imported."""

from __future__ import annotations

import gc
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.ops.startup import started_services
from tests.bot_process import bot_env, run_python, run_python_m_bot
from tests.conftest import FAST_RETRY, SettingsFactory

# The real entry point in a fresh interpreter, recording (audit hooks) when the worker is
# spawned, when a few heavy modules start importing, each scrypt hash and on which thread, and
# the first connection out (the readiness probe or the login, once ready).
# discord.py and the model are pointed at a port that refuses connections: start-up runs to
# the login, which fails, and the process ends.
SCRIPT = """
import gc, hashlib, json, sys, threading
events = []
scrypt = hashlib.scrypt
def recorded_scrypt(*args, **kwargs):
    on_main = threading.current_thread() is threading.main_thread()
    events.append("scrypt on the main thread" if on_main else "scrypt on a thread")
    return scrypt(*args, **kwargs)
hashlib.scrypt = recorded_scrypt
watched = {"bot.services", "aiosqlite", "discord.ext", "ollama"}
def audit(event, args):
    if event == "import" and args[0] in watched:
        watched.discard(args[0])
        events.append("import " + args[0])
sys.addaudithook(audit)
import aiohttp, asyncio, yarl
# Spawns and connections are recorded where the bot asks for them: uvloop makes both in C, where
# no audit event is raised.
spawn = asyncio.create_subprocess_exec
async def recorded_spawn(*args, **kwargs):
    if "bot.memory.japanese" in [str(a) for a in args]:
        events.append("worker spawned")
    return await spawn(*args, **kwargs)
asyncio.create_subprocess_exec = recorded_spawn
# Every connection out (discord.py's, the model client's) goes through aiohttp's connector.
connect = aiohttp.BaseConnector.connect
async def recorded_connect(self, request, *args, **kwargs):
    if request.url.port == int(sys.argv[1]) and "connect" not in events:
        events.append("connect")
    return await connect(self, request, *args, **kwargs)
aiohttp.BaseConnector.connect = recorded_connect
from discord.gateway import DiscordWebSocket
from discord.http import Route
Route.BASE = f"http://127.0.0.1:{sys.argv[1]}/api/v10"
DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(f"ws://127.0.0.1:{sys.argv[1]}/gateway")
from bot.__main__ import main
code = main([])
report = {"code": code, "events": events, "gc_enabled": gc.isenabled()}
report["uvloop"] = "uvloop" in sys.modules
loaded = {name: name in sys.modules for name in ("litellm", "sqlalchemy")}
print(json.dumps({**report, **loaded}))
"""


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound but not listening: every connection to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def start_until_login_refused(
    tmp_path: Path, refusing_port: int, **extra: str
) -> tuple[dict[str, Any], str]:
    """Run `python -m bot` (through SCRIPT) until its Discord login is refused at
    `refusing_port`: SCRIPT's report and the child's stderr."""
    env = bot_env(
        tmp_path / "bot.db",
        DISCORD_TOKEN="token",
        LLM_MODEL="ollama/test-model",
        LLM_API_BASE=f"http://127.0.0.1:{refusing_port}",
        **extra,
    )
    returncode, out, err = await run_python(["-c", SCRIPT, str(refusing_port)], env, tmp_path)
    assert returncode == 0, err
    report: dict[str, Any] = json.loads(out.splitlines()[-1])
    assert report["code"] == 1, err  # the login was refused, after start-up
    return report, err


@pytest.mark.sqlite_only(reason="the child process opens its own DB_PATH file")
async def test_python_m_bot_spawns_the_worker_before_the_heavy_imports(
    tmp_path: Path, refusing_port: int
) -> None:
    report, err = await start_until_login_refused(tmp_path, refusing_port, ADMIN_ENABLED="false")
    events: list[str] = report["events"]
    assert "Cannot connect to host" in err
    assert events.count("worker spawned") == 1  # the services use the worker spawned first
    spawned = events.index("worker spawned")
    for heavy in ("import bot.services", "import aiosqlite", "import discord.ext"):
        assert heavy in events[spawned:], (heavy, events)
    assert spawned < events.index("import ollama") < events.index("connect")
    assert report["gc_enabled"]  # the cyclic collector is left as Python has it
    assert not report["litellm"]  # an Ollama model: LiteLLM (~4 s to import) is never loaded
    assert not report["sqlalchemy"]  # SQLite: SQLAlchemy (~0.3 s to import) is never loaded


@pytest.mark.sqlite_only(reason="the child process opens its own DB_PATH file")
async def test_python_m_bot_hashes_the_admin_password_on_a_thread_while_starting(
    tmp_path: Path, refusing_port: int
) -> None:
    report, err = await start_until_login_refused(
        tmp_path,
        refusing_port,
        ADMIN_ENABLED="true",
        ADMIN_PASSWORD="correct horse battery staple",
        ADMIN_PORT="0",
    )
    assert "admin API listening" in err
    events: list[str] = report["events"]
    # Once, and not on the event loop's thread (~0.07 s it would block before Discord connects):
    # started while the services open, on the other core.
    hashes = [event for event in events if event.startswith("scrypt")]
    assert hashes == ["scrypt on a thread"], events
    assert events.index("scrypt on a thread") < events.index("connect")


@pytest.mark.sqlite_only(reason="the child process opens its own DB_PATH file")
async def test_python_m_bot_runs_on_uvloop_unless_event_loop_says_asyncio(
    tmp_path: Path, refusing_port: int
) -> None:
    pytest.importorskip("uvloop")
    _, err = await start_until_login_refused(tmp_path, refusing_port, ADMIN_ENABLED="false")
    assert "event loop: uvloop" in err
    report, err = await start_until_login_refused(
        tmp_path, refusing_port, ADMIN_ENABLED="false", EVENT_LOOP="asyncio"
    )
    assert "event loop: asyncio" in err
    assert not report["uvloop"]  # not even imported
    assert "connect" in report["events"]  # it ran to the login all the same


async def test_started_services_are_handed_out_with_the_worker_loaded(
    make_settings: SettingsFactory,
) -> None:
    from bot.services import ServiceOptions, open_services

    settings: Settings = make_settings("ollama")
    options = ServiceOptions(retry=FAST_RETRY, builtin_tools=False)
    frozen = gc.get_freeze_count()
    async with started_services(
        lambda analyzer: open_services(settings, options, analyzer=analyzer)
    ) as services:
        assert services.analyzer.loaded  # the spawned worker was waited for before ready
        # The collector stays on; what start-up made is frozen out of full collections.
        assert gc.isenabled() and gc.get_freeze_count() > frozen
        assert not any(item is services.context for item in gc.get_objects())
        # The knowledge base's files, read after start-up, are frozen once read.
        settings.kb_dir.mkdir(parents=True, exist_ok=True)
        (settings.kb_dir / "tea.md").write_text("# Tea\n\nGreen tea in Kyoto.\n", "utf-8")
        assert (await services.local_kb.sync()).files == 1
        assert not [item for item in gc.get_objects() if type(item).__name__ == "_Doc"]
        pid = services.analyzer.worker_pid
        assert await services.analyzer.nouns_async("東京の猫") == ["東京", "猫"]
        assert services.analyzer.worker_pid == pid
    assert services.analyzer.worker_pid is None  # closed with the services
    assert gc.get_freeze_count() == 0  # unfrozen on the way out: a later open collects these


async def test_an_unsafe_admin_bind_is_refused_before_anything_opens(tmp_path: Path) -> None:
    env = bot_env(tmp_path / "bot.db", DISCORD_TOKEN="token", ADMIN_HOST="0.0.0.0")
    code, _, err = await run_python_m_bot([], env, tmp_path)
    assert code == 2, err
    assert "Traceback" not in err
    assert "ADMIN_PASSWORD" in err.strip().splitlines()[-1]
    assert not (tmp_path / "bot.db").exists()  # refused before the database was opened
