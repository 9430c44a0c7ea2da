"""Consistent copies of the SQLite database while the bot runs (SQLite's online backup API)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from bot.errors import StartupError

log = logging.getLogger(__name__)


BackupHow = Literal["api", "cli"]


class BackupError(StartupError):
    """A backup could not be made; the message names the file and the fix."""


@dataclass(frozen=True)
class BackupRecord:
    """The last backup made by the owner: when, how (admin API download or CLI), which file."""

    at: datetime
    how: BackupHow
    target: str


def backup_name(now: datetime | None = None) -> str:
    """The file name a backup gets when only a folder is given: playchat-<UTC time>.db."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%SZ")
    return f"playchat-{stamp}.db"


def snapshot_path(db_path: Path, version: int) -> Path:
    """Where the copy taken before migrating `db_path` to schema `version` goes."""
    return db_path.with_name(f"{db_path.name}.before-v{version}.bak")


def resolve_target(target: str) -> Path:
    """The file to write: `target`, or a time-stamped file inside it when it names a folder
    (an existing one, or any path ending in a slash, which is created)."""
    path = Path(target)
    if target.endswith(("/", os.sep)) or path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        return path / backup_name()
    return path


def backup_database(source: Path, target: Path, *, overwrite: bool = False) -> Path:
    """Copy the database at `source` to `target` consistently, from a separate connection.

    The copy is one read transaction, so it holds exactly what was committed when it began,
    while the bot goes on writing (WAL). It is written next to `target` and renamed into place
    once it passes `PRAGMA quick_check`, so `target` is never a half-written file. Blocking:
    run it in a thread.
    """
    if not source.is_file():
        raise BackupError(
            f"There is no database at {source} to back up; check DB_PATH (run from the folder "
            "with your .env)."
        )
    if target.exists() and not overwrite:
        raise BackupError(f"{target} exists already; choose a new file name or remove it.")
    try:
        src = _open_source(source)
    except sqlite3.Error as exc:
        raise BackupError(
            f"Cannot read the database {source} ({exc}); run the backup as the user that runs "
            "PlayChat."
        ) from exc
    # Its own name per copy: processes upgrading one database at once each snapshot it to the
    # same target, and a shared partial file was renamed away under the others.
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")
    try:
        with closing(src):
            _copy(src, partial)
        partial.replace(target)
    except (sqlite3.Error, OSError) as exc:
        partial.unlink(missing_ok=True)
        raise BackupError(
            f"Backing up {source} to {target} failed ({exc}); check that the target folder "
            "exists, is writable and has room."
        ) from exc
    log.info("database backed up to %s", target)
    return target


def _open_source(source: Path) -> sqlite3.Connection:
    # mode=rw: never create a database where there was none (reading WAL needs write access).
    conn = sqlite3.connect(f"{source.resolve().as_uri()}?mode=rw", uri=True)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _copy(src: sqlite3.Connection, target: Path) -> None:
    target.unlink(missing_ok=True)
    with closing(sqlite3.connect(target)) as dst:
        src.backup(dst)  # all pages in one step: one consistent snapshot
        # A standalone file: no -wal/-shm needed beside it to read or restore it.
        dst.execute("PRAGMA journal_mode=DELETE")
        result = dst.execute("PRAGMA quick_check").fetchone()
        if result is None or result[0] != "ok":
            raise sqlite3.DatabaseError(f"the copy failed its check: {result}")


async def backup_to(source: Path, target: Path, *, overwrite: bool = False) -> Path:
    """`backup_database` in a worker thread, so the event loop keeps serving."""
    return await asyncio.to_thread(backup_database, source, target, overwrite=overwrite)


def record_path(db_path: Path) -> Path:
    """The small file beside the database that remembers the last backup (any process's)."""
    return db_path.with_name(f"{db_path.name}.last-backup.json")


def record_backup(db_path: Path, how: BackupHow, target: str, now: datetime | None = None) -> None:
    """Remember a finished backup of `db_path`; a failure to remember is logged, not raised."""
    at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    path = record_path(db_path)
    partial = path.with_name(f".{path.name}.part")
    try:
        partial.write_text(json.dumps({"at": at, "how": how, "target": target}), encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        log.warning("could not note the backup in %s (%s); the backup itself is fine", path, exc)


def last_backup(db_path: Path) -> BackupRecord | None:
    """The last backup `record_backup` noted for `db_path`, or None (none, or unreadable)."""
    try:
        data = json.loads(record_path(db_path).read_text(encoding="utf-8"))
        how: BackupHow = "api" if data["how"] == "api" else "cli"
        return BackupRecord(datetime.fromisoformat(data["at"]), how, str(data["target"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        log.debug("the backup record of %s is unreadable", db_path, exc_info=True)
        return None
