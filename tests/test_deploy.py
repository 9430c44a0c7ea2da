"""Deployment files: the systemd unit passes `systemd-analyze verify` and is hardened; the
license is a file and an SPDX expression."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
UNIT = REPO / "deploy" / "playchat.service"
INSTALLED_AT = "/opt/playchat"


def _unit() -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(UNIT.read_text("utf-8"))
    return parser


def _verify(unit_text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` on the unit as installed at a temporary checkout."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd; .ci/run does)")
    checkout = tmp_path / "playchat"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (checkout / "data").mkdir()
    (checkout / "knowledge_base").mkdir()
    unit = tmp_path / "playchat.service"
    unit.write_text(unit_text.replace(INSTALLED_AT, str(checkout)), "utf-8")
    return subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    result = _verify(UNIT.read_text("utf-8"), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", "no warnings either (unknown keys are only warnings)"


def test_verify_does_catch_a_broken_unit(tmp_path: Path) -> None:
    broken = UNIT.read_text("utf-8").replace("Restart=on-failure", "Restart=sometimes")
    result = _verify(broken, tmp_path)
    assert "sometimes" in result.stderr


def test_the_unit_runs_the_venv_restarts_on_failure_and_is_confined() -> None:
    service = _unit()["Service"]
    assert service["WorkingDirectory"] == INSTALLED_AT
    assert service["ExecStart"] == f"{INSTALLED_AT}/.venv/bin/python -m bot"
    assert service["Restart"] == "on-failure"
    assert service["RestartPreventExitStatus"] == "2", "a configuration error does not loop"
    assert service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict"
    writable = service["ReadWritePaths"].split()
    assert writable == [f"{INSTALLED_AT}/data", f"{INSTALLED_AT}/knowledge_base"]
    assert service["User"] != "root"


def test_the_license_is_a_file_and_an_spdx_expression() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert project["project"]["license"] == "MIT"
    assert project["project"]["license-files"] == ["LICENSE"]
    # PEP 639 license expressions need setuptools 77; older ones warn at every install.
    assert "setuptools>=77" in project["build-system"]["requires"]
    text = (REPO / "LICENSE").read_text("utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 PlayChat developers" in text
