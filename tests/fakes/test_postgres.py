"""The temporary PostgreSQL fixture gives a working server and a fresh database per test."""

from __future__ import annotations

from urllib.parse import urlsplit

from tests.fakes.postgres import TempPostgres


def test_the_server_answers_sql_over_loopback(
    postgres_url: str, postgres_server: TempPostgres
) -> None:
    parts = urlsplit(postgres_url)
    assert (parts.scheme, parts.hostname, parts.username) == ("postgresql", "127.0.0.1", "postgres")
    assert parts.port == postgres_server.port
    version = postgres_server.psql("SHOW server_version_num")
    assert int(version) >= 150000
    assert postgres_server.psql("SELECT inet_server_addr()") == "127.0.0.1"
    assert postgres_server.psql("SHOW fsync") == "off"


def test_each_test_gets_its_own_empty_database(
    postgres_db: str, postgres_server: TempPostgres
) -> None:
    name = urlsplit(postgres_db).path.lstrip("/")
    assert postgres_server.psql("SELECT current_database()", name) == name
    postgres_server.psql("CREATE TABLE t (id serial PRIMARY KEY, body text)", name)
    postgres_server.psql("INSERT INTO t (body) VALUES ('héllo'), ('世界')", name)
    assert postgres_server.psql("SELECT body FROM t ORDER BY id", name).splitlines() == [
        "héllo",
        "世界",
    ]
    other = postgres_server.create_database()
    assert other != postgres_db
    tables = "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
    assert postgres_server.psql(tables, urlsplit(other).path.lstrip("/")) == "0"
