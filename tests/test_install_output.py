"""`make install` keeps pip's output in a log and shows it only when the install fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PIP_LINES = 300


def _fake_venv(tmp_path: Path, exit_code: int) -> Path:
    """A venv whose python answers `-m pip install` with many lines and the given exit code."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'i=0; while [ $i -lt {PIP_LINES} ]; do echo "pip line $i"; i=$((i+1)); done\n'
        "echo 'editable install banner' >&2\n"
        f"exit {exit_code}\n",
        "utf-8",
    )
    python.chmod(0o755)
    return venv


def _make_install(venv: Path) -> subprocess.CompletedProcess[str]:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    return subprocess.run(
        [make, "--no-print-directory", "-C", str(REPO), "install", f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_successful_install_prints_a_few_lines_not_pip_s(tmp_path: Path) -> None:
    done = _make_install(_fake_venv(tmp_path, 0))
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "pip line" not in output
    assert "editable install banner" not in output
    assert len(output.splitlines()) <= 3, output
    assert (tmp_path / "venv" / ".installed").exists()


def test_a_failed_install_shows_pip_s_whole_output_and_fails(tmp_path: Path) -> None:
    done = _make_install(_fake_venv(tmp_path, 1))
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"pip line {PIP_LINES - 1}" in output
    assert "editable install banner" in output
    assert "pip install failed" in output
    assert not (tmp_path / "venv" / ".installed").exists()
