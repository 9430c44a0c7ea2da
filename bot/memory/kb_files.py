"""The Markdown files of the local knowledge base on disk: scanning, reading, titles."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger(__name__)

# Bigger files are read (and returned) up to this size; their hash still covers every byte.
MAX_READ_BYTES = 1 << 20
HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)

Snapshot = dict[str, tuple[int, int]]

# The directory is stat-scanned at most this often (a few ms for 500 files): an edited file is
# picked up within seconds without paying the scan on every message.
RESCAN_SECONDS = 2.0


def scan_dir(kb_dir: Path) -> Snapshot:
    """(mtime_ns, size) of every visible, regular kb_dir/**/*.md file; symlinks are skipped."""
    snapshot: Snapshot = {}
    if not kb_dir.is_dir():
        return snapshot
    for root, dirnames, filenames in os.walk(kb_dir, followlinks=False):
        dirnames[:] = [name for name in dirnames if not name.startswith(".")]
        for name in filenames:
            if name.startswith(".") or not name.lower().endswith(".md"):
                continue
            if root == str(kb_dir) and name.lower() == "readme.md":
                continue  # the folder's own instructions, not knowledge
            full = os.path.join(root, name)
            try:
                info = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                rel = Path(full).relative_to(kb_dir).as_posix()
                snapshot[rel] = (info.st_mtime_ns, info.st_size)
    return snapshot


def read_files(kb_dir: Path, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """(text, sha256) of each readable file; files that vanished or fail to read are left out."""
    out: dict[str, tuple[str, str]] = {}
    for rel in paths:
        digest = hashlib.sha256()
        head = bytearray()
        try:
            with open(kb_dir / rel, "rb") as handle:
                while chunk := handle.read(1 << 16):
                    digest.update(chunk)
                    if len(head) < MAX_READ_BYTES:
                        head += chunk[: MAX_READ_BYTES - len(head)]
        except OSError as exc:
            log.warning("cannot read knowledge file %s: %s", rel, exc)
            continue
        text = bytes(head).decode("utf-8", errors="replace").removeprefix("\ufeff")
        out[rel] = (text, digest.hexdigest())
    return out


def title_of(content: str, path: str) -> str:
    """The first Markdown heading, or the file name without its extension."""
    match = HEADING.search(content)
    return match.group(1).strip() if match else Path(path).stem
