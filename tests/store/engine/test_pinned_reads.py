"""`Database.pinned_reads`: a chain of reads on one PostgreSQL connection in one transaction,
planned without sequential scans; on SQLite the database itself."""

from __future__ import annotations

from pathlib import Path

from bot.store.engine.database import Database


async def test_postgresql_reads_share_one_connection_with_seq_scans_off(postgres_db: str) -> None:
    db = await Database.connect(postgres_db)
    try:
        async with db.pinned_reads() as reads:
            assert reads.dialect == "postgresql"
            first = await reads.scalar("SELECT pg_backend_pid()")
            assert await reads.scalar("SHOW enable_seqscan") == "off"
            assert await reads.scalar("SELECT pg_backend_pid()") == first
            assert await reads.scalar("SELECT txid_current_if_assigned() IS NULL") is True
            row = await reads.fetchone("SELECT COUNT(*) AS n FROM messages")
            assert row is not None and row["n"] == 0
        # SET LOCAL ended with the transaction: the pooled connection's next user plans freely.
        assert await db.scalar("SHOW enable_seqscan") == "on"
    finally:
        await db.close()


async def test_sqlite_reads_are_the_database_itself(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "pinned.db")
    try:
        async with db.pinned_reads() as reads:
            assert reads is db
    finally:
        await db.close()
