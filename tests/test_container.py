"""The container: the Dockerfile and compose.yaml say what the README promises (non-root user,
data in a volume, a healthcheck on /health, the admin port on the host's loopback only), and
an image built from them runs the real bot against the loopback Discord and model.

Running the image needs buildah and an image built beforehand (building takes minutes):
  podman build --format docker -t playchat:test .
  PLAYCHAT_CONTAINER_IMAGE=playchat:test pytest tests/test_container.py
It runs with `buildah run --isolation=chroot`, which needs no cgroups (this machine's VM cannot
give podman's OCI runtimes theirs); the image, its user, volume and healthcheck are the same."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.fakes.discord_server import FakeDiscord
from tests.fakes.llm_server import FakeLLMServer, Text
from tests.sharding.processes import ENTRY, BotProcess, free_port

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = (REPO / "Dockerfile").read_text("utf-8")
COMPOSE = (REPO / "compose.yaml").read_text("utf-8")
IMAGE = os.environ.get("PLAYCHAT_CONTAINER_IMAGE", "")
START = 90.0
REPLY = "Answered from inside the container."


def _instruction(name: str) -> list[str]:
    """The Dockerfile's `name` instructions (continuation lines joined)."""
    joined = re.sub(r"\\\n\s*", " ", DOCKERFILE)
    return [line.split(None, 1)[1] for line in joined.splitlines() if line.startswith(name + " ")]


def test_the_image_runs_as_an_unprivileged_user_with_data_in_a_volume() -> None:
    [user] = _instruction("USER")
    assert user.strip() not in {"root", "0"}
    assert "--uid 10001" in DOCKERFILE
    assert _instruction("VOLUME") == ['["/data"]']
    env = " ".join(_instruction("ENV"))
    assert "DB_PATH=/data/" in env
    assert "KB_DIR=/data/" in env


def test_the_healthcheck_asks_the_public_health_path() -> None:
    [check] = _instruction("HEALTHCHECK")
    assert "/health" in check
    assert "127.0.0.1" in check
    assert _instruction("CMD")[-1] == '["python3", "-m", "bot"]'


def test_compose_publishes_the_admin_port_on_the_host_s_loopback_only() -> None:
    ports = re.findall(r'-\s*"([^"]+:\d+)"', COMPOSE)
    assert ports == ["127.0.0.1:8765:8765"]
    assert "playchat-data:/data" in COMPOSE
    # Ollama is optional: only with `--profile ollama`.
    assert re.search(r"ollama:\n(?:\s+.*\n)*?\s+profiles: \[\"ollama\"\]", COMPOSE)


def _run(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=120).stdout


def _image_config() -> dict[str, Any]:
    [inspected] = json.loads(_run("podman", "image", "inspect", IMAGE))
    return dict(inspected)


def _bot_pids(uid: int) -> list[int]:
    """The container's bot process (the command line carrying ENTRY, run by `uid`)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if proc.stat().st_uid != uid:
                continue
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[0].endswith(b"python3") and argv[1:3] == [b"-c", ENTRY.encode()]:
            pids.append(int(proc.name))
    return pids


@pytest.fixture
def container() -> Any:
    """A working container of the image (buildah), removed afterwards."""
    if not IMAGE:
        pytest.skip("set PLAYCHAT_CONTAINER_IMAGE to an image built from the Dockerfile")
    if shutil.which("buildah") is None or shutil.which("podman") is None:
        pytest.skip("buildah and podman are not installed")
    if os.geteuid() != 0:
        pytest.skip("buildah's chroot isolation needs root")
    name = _run("buildah", "from", "--pull-never", IMAGE).strip()
    try:
        yield name
    finally:
        subprocess.run(["buildah", "rm", name], capture_output=True, check=False)


async def test_the_image_answers_on_discord_and_reports_healthy(
    tmp_path: Path, llm: FakeLLMServer, container: str
) -> None:
    config = _image_config()
    uid = int(_run("buildah", "run", "--isolation=chroot", container, "--", "id", "-u"))
    assert uid != 0
    port = free_port()
    llm.default_reply = Text(REPLY)
    async with FakeDiscord() as server:
        env = {
            "DISCORD_TOKEN": server.token,
            "LLM_MODEL": "ollama/test-model",
            "LLM_API_BASE": llm.url,
            "ADMIN_PORT": str(port),
            "ADMIN_PASSWORD": "container-test-password",
            "USER_COOLDOWN_SECONDS": "0",
            "LOG_LEVEL": "INFO",
        }
        flags = [f"--env={key}={value}" for key, value in env.items()]
        process = await asyncio.create_subprocess_exec(
            "buildah", "run", "--isolation=chroot", "--network=host",
            *flags, container, "--", "python3", "-c", ENTRY, server.api_url, server.gateway_url,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        running = BotProcess(process)
        try:
            await running.wait_for_log(r"admin API on http", START)
            await running.wait_for_log(r"logged in as", START)
            message = await server.inject_message("hello from the host")
            try:
                await server.wait_for(
                    lambda: any(m.content == REPLY for m in server.messages_in(message.id)),
                    START,
                )
            except TimeoutError as exc:
                raise AssertionError(running.stderr[-4000:]) from exc
            async with (
                aiohttp.ClientSession() as http,
                http.get(f"http://127.0.0.1:{port}/health") as response,
            ):
                assert response.status == 200
            # The image's own healthcheck command, run inside the container as Docker would.
            test = config["Healthcheck"]["Test"]
            assert test[0] == "CMD"
            check = subprocess.run(
                ["buildah", "run", "--isolation=chroot", "--network=host",
                 f"--env=ADMIN_PORT={port}", container, "--", *test[1:]],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
            assert check.returncode == 0, check.stderr
        finally:
            # `buildah run` kills its command on SIGTERM; Docker and podman pass SIGTERM on, so
            # the bot itself is told, as `docker stop` would.
            for pid in _bot_pids(uid):
                os.kill(pid, signal.SIGTERM)
            code = await asyncio.wait_for(running.exited(), START)
    assert code == 0, running.stderr[-3000:]
    # The database is in the volume's folder, written by the unprivileged user.
    owner = _run(
        "buildah",
        "run",
        "--isolation=chroot",
        container,
        "--",
        "stat",
        "-c",
        "%u",
        "/data/playchat.db",
    )
    assert int(owner) == uid
