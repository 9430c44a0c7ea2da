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


def shown(rel: str) -> str:
    """`rel` printable: bytes of a name that is not UTF-8 appear as \\xNN escapes."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _folders_to_walk(rel_root: Path, names: list[str], problems: dict[str, str]) -> list[str]:
    """The visible folders among `names`; those whose name is not UTF-8 go to `problems`."""
    kept = []
    for name in names:
        if name.startswith("."):
            continue
        if not _is_utf8(name):
            problems[shown((rel_root / name).as_posix())] = "folder name is not UTF-8"
            continue
        kept.append(name)
    return kept


def _is_knowledge_name(name: str, *, top: bool) -> bool:
    if name.startswith(".") or not name.lower().endswith(".md"):
        return False
    # The folder's own README.md holds instructions, not knowledge.
    return not (top and name.lower() == "readme.md")


def scan_dir(kb_dir: Path, problems: dict[str, str] | None = None) -> Snapshot:
    """(mtime_ns, size) of every visible, regular kb_dir/**/*.md file; symlinks are skipped.

    A file or folder that cannot be taken (a name that is not UTF-8, a folder that cannot be
    listed) is left out and, when `problems` is given, named there (shown path → reason).
    """
    snapshot: Snapshot = {}
    found = problems if problems is not None else {}
    if not kb_dir.is_dir():
        return snapshot

    def unlistable(exc: OSError) -> None:
        where = Path(os.fsdecode(exc.filename or kb_dir)).relative_to(kb_dir).as_posix()
        found[shown(where)] = f"cannot list this folder ({exc.strerror or exc})"

    for root, dirnames, filenames in os.walk(kb_dir, onerror=unlistable, followlinks=False):
        rel_root = Path(root).relative_to(kb_dir)
        dirnames[:] = _folders_to_walk(rel_root, dirnames, found)
        for name in filenames:
            if not _is_knowledge_name(name, top=root == str(kb_dir)):
                continue
            rel = (rel_root / name).as_posix()
            if not _is_utf8(name):
                found[shown(rel)] = "file name is not UTF-8"
                continue
            try:
                info = os.lstat(os.path.join(root, name))
            except OSError:
                continue  # vanished since the listing
            if stat.S_ISREG(info.st_mode):
                snapshot[rel] = (info.st_mtime_ns, info.st_size)
    return snapshot


def read_files(
    kb_dir: Path, paths: Sequence[str], problems: dict[str, str] | None = None
) -> dict[str, tuple[str, str]]:
    """(text, sha256) of each readable file. Files that vanished are left out; files that fail
    to read otherwise are left out and, when `problems` is given, named there (path → reason).
    Bytes that are not UTF-8 are replaced."""
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
        except FileNotFoundError:
            log.debug("knowledge file %s vanished before it was read", rel)
            continue
        except (OSError, ValueError) as exc:
            if problems is not None:
                problems[rel] = f"cannot read it ({type(exc).__name__}: {exc})"
            continue
        text = bytes(head).decode("utf-8", errors="replace").removeprefix("\ufeff")
        out[rel] = (text, digest.hexdigest())
    return out


def title_of(content: str, path: str) -> str:
    """The first Markdown heading, or the file name without its extension."""
    match = HEADING.search(content)
    return match.group(1).strip() if match else Path(path).stem
