"""The several-process tests run on each engine: `shared_db` is one database (a SQLite file or
a PostgreSQL database on the session's cluster) that every process of the test uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sharding.processes import SharedDatabase


@pytest.fixture
def shared_db(database_url: str, tmp_path: Path) -> SharedDatabase:
    """An empty database on the parametrised engine, for several processes at once."""
    return SharedDatabase(database_url, tmp_path)
