"""A real, temporary PostgreSQL for tests, from Debian's `postgresql` package.

    def test_x(postgres_db: str) -> None:     # a fresh, empty database for this test
        ...                                   # postgresql://postgres@127.0.0.1:PORT/test_…

`postgres_url` (session) starts one throwaway cluster: `initdb` into a temp dir and `pg_ctl
start` on a free loopback port with its socket in that dir, trust authentication, durability
off (fsync, synchronous commit: a test cluster need not survive a crash). initdb and the
server refuse to run as root, so as root the dir is given to the `postgres` system user and
both run as that user (`runuser`). `postgres_db` creates a database per test (`CREATE
DATABASE … TEMPLATE template0`, a few milliseconds). Without the binaries (/usr/lib/postgresql/
*/bin) the fixtures skip with the reason and the fix (`.ci/run` installs the package).

`engine` runs a test once per engine (`sqlite`, `postgresql`) and `database_url` is an empty
database on it: a SQLite file in the test's tmp dir, or a fresh database on the cluster (only
the PostgreSQL runs start the cluster).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bot.store.engine.dialect import sqlite_url

log = logging.getLogger(__name__)

PG_LIB = Path("/usr/lib/postgresql")
SERVER_USER = "postgres"
SKIP_REASON = (
    "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin "
    "(install them: apt-get install -y postgresql; .ci/run does this)"
)


def find_bin_dir(root: Path = PG_LIB) -> Path | None:
    """The newest installed PostgreSQL's bin directory (with initdb and pg_ctl), if any."""
    found = [
        d / "bin"
        for d in root.glob("*")
        if (d / "bin" / "initdb").is_file() and (d / "bin" / "pg_ctl").is_file()
    ]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return found[-1] if found else None


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def psql_path(bin_dir: Path) -> str:
    """psql from the server's version, else the one on PATH."""
    own = bin_dir / "psql"
    return str(own) if own.is_file() else shutil.which("psql") or "psql"


@dataclass
class TempPostgres:
    """One temporary cluster: start it, make databases, run SQL through psql, stop it."""

    bin_dir: Path
    base: Path
    port: int = 0
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def data_dir(self) -> Path:
        """The cluster's files (and its socket)."""
        return self.base / "data"

    @property
    def url(self) -> str:
        """The maintenance database as the superuser `postgres`."""
        return self.url_of("postgres")

    def url_of(self, database: str) -> str:
        """postgresql://postgres@127.0.0.1:PORT/DATABASE."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _as_server_user(self, args: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return args
        return ["runuser", "-u", SERVER_USER, "--", *args]

    def start(self) -> None:
        """initdb and start the server on a free loopback port (waits until it accepts)."""
        self.data_dir.mkdir(parents=True)
        if os.geteuid() == 0:
            user = pwd.getpwnam(SERVER_USER)
            for path in (self.base, self.data_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
        initdb = [str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", "postgres"]
        initdb += ["--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C.UTF-8"]
        _run(self._as_server_user(initdb))
        self.port = free_port()
        options = " ".join(
            (
                "-c listen_addresses=127.0.0.1",
                f"-c port={self.port}",
                f"-c unix_socket_directories={self.data_dir}",
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off",
                "-c max_connections=200",
            )
        )
        log_file = self.data_dir / "server.log"
        pg_ctl = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(log_file)]
        _run(self._as_server_user([*pg_ctl, "-w", "-t", "30", "-o", options, "start"]))
        log.debug("temporary PostgreSQL on port %d in %s", self.port, self.data_dir)

    def stop(self) -> None:
        """Stop the server at once (its files are thrown away anyway)."""
        if not (self.data_dir / "postmaster.pid").exists():
            return
        pg_ctl = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "immediate"]
        _run(self._as_server_user([*pg_ctl, "-w", "stop"]))

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL with psql over TCP as `postgres`; its unaligned, tuples-only output."""
        args = [psql_path(self.bin_dir), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        args += ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database]
        return _run([*args, "-c", sql]).strip()

    def create_database(self, prefix: str = "test") -> str:
        """A new empty database (from template0); its URL."""
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        self.psql(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url_of(name)


def _run(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        output = done.stderr.strip() or done.stdout
        raise RuntimeError(f"{' '.join(args[:4])}… failed ({done.returncode}): {output}")
    return done.stdout


@contextlib.contextmanager
def temp_postgres(bin_dir: Path | None = None) -> Iterator[TempPostgres]:
    """A started temporary cluster, stopped and deleted at exit."""
    bin_dir = bin_dir or find_bin_dir()
    if bin_dir is None:
        raise FileNotFoundError(SKIP_REASON)
    # Not under pytest's tmp dir: its parents are private to root, and the server user must
    # be able to reach its data dir.
    base = Path(tempfile.mkdtemp(prefix="playchat-pg-"))
    server = TempPostgres(bin_dir, base)
    try:
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TempPostgres]:
    """One temporary PostgreSQL cluster for the whole run (skips when not installed)."""
    if find_bin_dir() is None:
        pytest.skip(SKIP_REASON)
    with temp_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url(postgres_server: TempPostgres) -> str:
    """postgresql://postgres@127.0.0.1:PORT/postgres of the session's cluster."""
    return postgres_server.url


@pytest.fixture
def postgres_db(postgres_server: TempPostgres) -> str:
    """The URL of a fresh, empty database for this test (on the session's cluster)."""
    return postgres_server.create_database()


ENGINES = ("sqlite", "postgresql")


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """Which engine this run of the test uses."""
    return str(request.param)


@pytest.fixture
def database_url(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """The URL of an empty database on `engine`."""
    if engine == "sqlite":
        return sqlite_url(tmp_path / "p.db")
    server: TempPostgres = request.getfixturevalue("postgres_server")
    return server.create_database()
