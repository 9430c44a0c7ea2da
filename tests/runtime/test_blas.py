"""numpy's BLAS runs on one thread in the bot's process, unless the owner says otherwise, and
the setting does not leak into the processes the bot starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = """
import os
{load}
import numpy as np

matrix = np.ones((200_000, 64), dtype=np.float32)
matrix @ np.ones(64, dtype=np.float32)
print(len(os.listdir("/proc/self/task")), os.environ.get("OPENBLAS_NUM_THREADS"))
"""
LOAD = "from bot.runtime.blas import load_numpy; load_numpy()"

counts_threads = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2,
    reason="counts threads through Linux's /proc on a machine of two cores or more",
)


def threads_and_variable(load: str, **env: str) -> tuple[int, str]:
    environment = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(load=load)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**environment, **env},
        timeout=60,
    )
    threads, variable = result.stdout.split()
    return int(threads), variable


@counts_threads
def test_numpy_loaded_by_the_bot_starts_no_blas_threads_and_leaves_no_variable() -> None:
    assert threads_and_variable("")[0] > 1, "plain numpy starts BLAS threads here"
    assert threads_and_variable(LOAD) == (1, "None")


@counts_threads
def test_an_owners_own_thread_count_is_kept() -> None:
    assert threads_and_variable(LOAD, OPENBLAS_NUM_THREADS="2") == (2, "2")


def test_numpy_loaded_after_the_start_up_freeze_is_frozen_too() -> None:
    """Its modules live as long as the process: a full collection need not walk them."""
    probe = (
        "import gc\n"
        "from bot.runtime.blas import load_numpy\n"
        "gc.freeze()\n"
        "load_numpy()\n"
        "import numpy\n"
        "print(any(item is numpy.__dict__ for item in gc.get_objects()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert result.stdout.split() == ["False"]
