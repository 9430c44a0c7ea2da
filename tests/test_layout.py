"""The tracked top level is exactly the list CONTRIBUTING.md documents."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_BLOCK = re.compile(r"<!-- top-level -->(.*?)<!-- /top-level -->", re.DOTALL)


def documented_top_level(text: str) -> set[str]:
    """The names between CONTRIBUTING.md's top-level markers (folders without their slash)."""
    found = _BLOCK.search(text)
    assert found is not None, "CONTRIBUTING.md has no <!-- top-level --> list"
    return {name.rstrip("/") for name in re.findall(r"`([^`]+)`", found.group(1))}


def tracked_top_level() -> set[str] | None:
    """The first path component of every tracked file (None outside a git checkout)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode("utf-8")
    return {path.split("/", 1)[0] for path in listed.split("\0") if path}


def test_the_tracked_top_level_is_the_documented_list() -> None:
    tracked = tracked_top_level()
    if tracked is None:
        pytest.skip("not a git checkout")
    documented = documented_top_level((REPO / "CONTRIBUTING.md").read_text("utf-8"))
    assert tracked - documented == set(), "tracked but not documented (or committed by mistake)"
    assert documented - tracked == set(), "documented but not tracked"


def test_the_list_is_read_from_its_markers() -> None:
    text = "x `no` <!-- top-level -->\n`bot/` `README.md`\n<!-- /top-level --> `later`"
    assert documented_top_level(text) == {"bot", "README.md"}
