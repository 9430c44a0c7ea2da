"""The store's tests run on both engines: `db` (and `database_url`) are parametrised over a
SQLite file and a fresh database on a real PostgreSQL (a temporary cluster on a loopback port).

The PostgreSQL cluster is started once per test session from Debian's `postgresql` binaries;
tests needing it are skipped, with the reason, when the binaries are missing. (A minimal
stand-in until tests/fakes/postgres.py lands; the lead dedupes.)
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.store.db import Database
from bot.store.dialect import sqlite_url

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
ENGINES = ("sqlite", "postgresql")


@dataclass
class PostgresServer:
    """A running throwaway cluster: `url(name)` for a database, `create()` for a fresh one."""

    port: int
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def url(self, name: str) -> str:
        """The URL of database `name` as the superuser over loopback."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run `sql` with psql and return its unaligned output."""
        done = subprocess.run(
            [str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
             "-d", database, "-v", "ON_ERROR_STOP=1", "-Atc", sql],
            check=True, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        return done.stdout

    def create(self) -> str:
        """A new empty database; returns its URL."""
        name = f"t{next(self._names)}"
        self.psql(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'")
        return self.url(name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    # initdb and the server refuse to run as root.
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster in a temporary folder, listening on 127.0.0.1 only."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"PostgreSQL binaries not found in {PG_BIN} (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="playchat-pg-"))
    data = root / "data"
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    port = _free_port()
    subprocess.run(
        _as_postgres([str(PG_BIN / "initdb"), "-D", str(data), "-U", "postgres",
                      "--auth=trust", "--encoding=UTF8", "--locale=C"]),
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    options = (
        f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={root} "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )
    subprocess.run(
        _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-w", "-l",
                      str(root / "log"), "-o", options, "start"]),
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    try:
        yield PostgresServer(port)
    finally:
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(data), "-w", "-m", "immediate",
                          "stop"]),
            check=False, capture_output=True, timeout=60,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Which engine this run of the test uses."""
    return str(request.param)


@pytest.fixture
def database_url(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A URL of an empty database on `engine`."""
    if engine == "sqlite":
        return sqlite_url(tmp_path / "p.db")
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.create()


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    """A fresh, migrated database on each engine."""
    database = await Database.connect(database_url)
    try:
        yield database
    finally:
        await database.close()
