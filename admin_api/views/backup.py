"""Backup: a consistent copy of the database, made on request, as a download."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Annotated

from aiohttp import web

from admin_api.errors import ApiError
from admin_api.routing import FileDownload, Route
from bot.services import Services
from bot.store.engine.backup import BackupError, backup_name, backup_to, record_backup

CHUNK = 256 * 1024
SQLITE_FILE = FileDownload(
    "application/vnd.sqlite3", "The SQLite database file, consistent as of the request."
)


async def download_backup(
    request: web.Request, services: Services
) -> Annotated[web.StreamResponse, SQLITE_FILE]:
    """Download a backup of the database, made now while the bot keeps running.

    Restore it with the bot stopped: copy it over DB_PATH (README, "Backups and upgrades").
    """
    source = services.db.path
    if source is None:  # PostgreSQL: no file to copy
        raise ApiError(503, "backup_failed", "The database is PostgreSQL: back it up with pg_dump.")
    name = backup_name()
    copy = await asyncio.to_thread(_scratch_file, source.parent)
    try:
        try:
            await backup_to(source, copy, overwrite=True)
        except BackupError as exc:
            raise ApiError(503, "backup_failed", str(exc)) from exc
        response = web.StreamResponse(
            headers={
                "Content-Type": SQLITE_FILE.media_type,
                "Content-Disposition": f'attachment; filename="{name}"',
                "Cache-Control": "no-store",
            }
        )
        file = await asyncio.to_thread(copy.open, "rb")
        # The open handle keeps the data readable; the scratch name is gone before any byte
        # is sent, so nothing is left behind even if the client goes away mid-download.
        await asyncio.to_thread(copy.unlink, missing_ok=True)
        try:
            response.content_length = os.fstat(file.fileno()).st_size
            await response.prepare(request)
            while chunk := await asyncio.to_thread(file.read, CHUNK):
                await response.write(chunk)
        finally:
            file.close()
        await response.write_eof()
        await asyncio.to_thread(record_backup, source, "api", name)
        return response
    finally:
        await asyncio.to_thread(copy.unlink, missing_ok=True)


def _scratch_file(folder: Path) -> Path:
    # Next to the database: the same disk, and writable wherever the database is.
    handle, name = tempfile.mkstemp(prefix=".download-", suffix=".db", dir=folder)
    os.close(handle)
    return Path(name)


def routes() -> list[Route]:
    """Backup routes."""
    return [Route("GET", "/api/backup", download_backup)]
