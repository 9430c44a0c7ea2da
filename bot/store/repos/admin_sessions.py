"""Admin API login sessions: only the SHA-256 of each cookie token is stored."""

from __future__ import annotations

from bot.store.engine.database import Database


class AdminSessionRepository:
    """Reads and writes admin_sessions; timestamps are ISO-8601 UTC text."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def create(self, token_hash: str, *, created_at: str, expires_at: str) -> None:
        """Record a new login session."""
        await self._db.execute(
            "INSERT INTO admin_sessions (token_hash, created_at, expires_at) VALUES (?, ?, ?)",
            (token_hash, created_at, expires_at),
        )

    async def is_valid(self, token_hash: str, *, now: str) -> bool:
        """True when the session exists and has not expired at `now`."""
        value = await self._db.scalar(
            "SELECT 1 FROM admin_sessions WHERE token_hash = ? AND expires_at > ?",
            (token_hash, now),
        )
        return value is not None

    async def delete(self, token_hash: str) -> bool:
        """End one session (logout)."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM admin_sessions WHERE token_hash = ?", (token_hash,)
            )
            return cursor.rowcount > 0

    async def purge_expired(self, *, now: str) -> int:
        """Delete every session expired at `now`; returns how many."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM admin_sessions WHERE expires_at <= ?", (now,))
            return cursor.rowcount
