"""Deployment files: the systemd unit and the per-shard-range template unit pass
`systemd-analyze verify` and are hardened; the license is a file and an SPDX expression."""

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
TEMPLATE = REPO / "deploy" / "playchat@.service"
INSTALLED_AT = "/opt/playchat"


def _unit(path: Path = UNIT) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text("utf-8"))
    return parser


def _verify(
    unit_text: str, tmp_path: Path, name: str = "playchat.service", instance: str = ""
) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` on the unit (or an instance of the template unit `name`) as
    installed at a temporary checkout."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd; .ci/run does)")
    checkout = tmp_path / "playchat"
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (checkout / "data").mkdir()
    (checkout / "knowledge_base").mkdir()
    unit = tmp_path / name
    unit.write_text(unit_text.replace(INSTALLED_AT, str(checkout)), "utf-8")
    # An instance (playchat@0-1.service) is loaded from its template in the same folder.
    target = tmp_path / name.replace("@.", f"@{instance}.") if instance else unit
    return subprocess.run(
        [analyze, "verify", str(target)], capture_output=True, text=True, timeout=60, check=False
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


def test_the_template_unit_passes_systemd_analyze_verify_for_a_shard_range(
    tmp_path: Path,
) -> None:
    result = _verify(TEMPLATE.read_text("utf-8"), tmp_path, "playchat@.service", "0-1")
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", "no warnings either (unknown keys are only warnings)"
    broken = TEMPLATE.read_text("utf-8").replace("Restart=on-failure", "Restart=sometimes")
    result = _verify(broken, tmp_path / "broken", "playchat@.service", "0-1")
    assert "sometimes" in result.stderr


def test_the_template_serves_the_instance_s_shard_range_without_the_admin_port() -> None:
    service = _unit(TEMPLATE)["Service"]
    environment = service["Environment"]  # the last Environment= line; all are checked below
    lines = [
        line.removeprefix("Environment=")
        for line in TEMPLATE.read_text("utf-8").splitlines()
        if line.startswith("Environment=")
    ]
    assert "SHARD_IDS=%i" in lines and "ADMIN_ENABLED=false" in lines, lines
    assert environment in lines
    # Everything else as the single unit: same command, restarts, confinement.
    single = _unit()["Service"]
    for key in ("ExecStart", "WorkingDirectory", "Restart", "RestartPreventExitStatus", "User"):
        assert service[key] == single[key], key
    for key in ("NoNewPrivileges", "ProtectSystem", "ReadWritePaths", "CapabilityBoundingSet"):
        assert service[key] == single[key], key


def test_an_instance_name_is_a_shard_range_the_settings_accept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from bot.config import Settings, load_settings

    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SHARD_COUNT", "4")
    monkeypatch.setenv("SHARD_IDS", "2-3")  # what Environment=SHARD_IDS=%i gives playchat@2-3
    assert load_settings().shards.describe() == "shards 2, 3 of 4"


def test_the_license_is_a_file_and_an_spdx_expression() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    assert project["project"]["license"] == "MIT"
    assert project["project"]["license-files"] == ["LICENSE"]
    # PEP 639 license expressions need setuptools 77; older ones warn at every install.
    assert "setuptools>=77" in project["build-system"]["requires"]
    text = (REPO / "LICENSE").read_text("utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 PlayChat developers" in text
