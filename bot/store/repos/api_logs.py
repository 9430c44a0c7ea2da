"""API call log of every LLM request: latency, tokens, cost, redacted request and response."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.store.engine.connection import Connection, utcnow
from bot.store.engine.database import Database
from bot.store.engine.dialect import Row
from bot.store.engine.erase_lock import hold_against_erase


@dataclass(frozen=True)
class ApiLog:
    """One logged LLM (or MCP) call."""

    id: int
    session_id: str | None
    space_id: str | None
    model: str
    purpose: str
    request_json: str
    response_text: str | None
    error: str | None
    latency_ms: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    created_at: str
    # The token counts are (partly) the project's estimate: the server sent none for them.
    tokens_estimated: bool = False


@dataclass(frozen=True)
class Speaker:
    """The member a call answered (Discord user id as text; the name they had)."""

    member_id: str | None
    member_name: str | None


@dataclass(frozen=True)
class ApiLogFilter:
    """Which log rows a listing or a bulk delete applies to."""

    session_id: str | None = None
    space_id: str | None = None
    model: str | None = None
    errors_only: bool = False
    since: str | None = None
    until: str | None = None

    def where(self) -> tuple[str, list[Any]]:
        """SQL WHERE clause (without the keyword) and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.session_id is not None:
            clauses.append("session_id = ?")
            params.append(self.session_id)
        if self.space_id is not None:
            clauses.append("space_id = ?")
            params.append(self.space_id)
        if self.model is not None:
            clauses.append("model = ?")
            params.append(self.model)
        if self.errors_only:
            clauses.append("error IS NOT NULL")
        if self.since is not None:
            clauses.append("created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("created_at < ?")
            params.append(self.until)
        return (" AND ".join(clauses) or "TRUE"), params


_COLUMNS = (
    "id, session_id, space_id, model, purpose, request_json, response_text, error, latency_ms, "
    "prompt_tokens, completion_tokens, cost, created_at, tokens_estimated"
)


def _log(row: Row) -> ApiLog:
    values = {key: row[key] for key in row.keys()}  # noqa: SIM118
    values["tokens_estimated"] = bool(values["tokens_estimated"])
    return ApiLog(**values)


async def _erased_since(conn: Connection, space: str | None, since: str) -> str | None:
    """The placeholder of a message erased since `since` in `space` (any space: None)."""
    if space is None:
        return await _erased_since_all_spaces(conn, since)
    await hold_against_erase(conn, space)
    rows = await conn.execute_fetchall(
        "SELECT content FROM messages WHERE space_id = ? AND erased_at >= ? "
        "ORDER BY erased_at LIMIT 1",
        (space, since),
    )
    return str(rows[0]["content"]) if rows else None


async def _erased_since_all_spaces(conn: Connection, since: str) -> str | None:
    """Any space's: a call outside a conversation (an embedding batch) may mix spaces."""
    rows = await conn.execute_fetchall(
        "SELECT content FROM messages WHERE erased_at >= ? ORDER BY erased_at LIMIT 1", (since,)
    )
    return str(rows[0]["content"]) if rows else None


class ApiLogRepository:
    """Writes and queries api_logs."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self,
        *,
        session_id: str | None,
        model: str,
        purpose: str,
        request_json: str,
        response_text: str | None,
        error: str | None,
        latency_ms: int,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cost: float | None = None,
        tokens_estimated: bool = False,
        started_at: str | None = None,
    ) -> int:
        """Insert one log row (callers pass already-redacted text).

        The row's space is its session's (NULL for calls outside a conversation). A call that
        started (`started_at`) before a member of its space (of any space, for a call outside
        a conversation) was erased may carry their text: its bodies are stored as the erase's
        placeholder, as the erase blanked the rows before it.
        """
        async with self._db.transaction() as conn:
            space = None
            if session_id is not None:
                found = await conn.execute_fetchall(
                    "SELECT space_id FROM sessions WHERE id = ?", (session_id,)
                )
                space = str(found[0]["space_id"]) if found else None
            if started_at is not None:
                erased = await _erased_since(conn, space, started_at)
                if erased is not None:
                    request_json = erased
                    response_text = None if response_text is None else erased
            return await conn.insert(
                f"INSERT INTO api_logs ({_COLUMNS.removeprefix('id, ')}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    space,
                    model,
                    purpose,
                    request_json,
                    response_text,
                    error,
                    latency_ms,
                    prompt_tokens,
                    completion_tokens,
                    cost,
                    utcnow(),
                    int(tokens_estimated),
                ),
            )

    async def list(
        self, log_filter: ApiLogFilter, *, limit: int = 50, before_id: int | None = None
    ) -> list[ApiLog]:
        """Matching rows, newest first; page with the last id as `before_id`."""
        where, params = log_filter.where()
        if before_id is not None:
            where += " AND id < ?"
            params.append(before_id)
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM api_logs WHERE {where} ORDER BY id DESC LIMIT ?",
            (*params, limit),
        )
        return [_log(row) for row in rows]

    async def speakers(self, log_ids: Sequence[int]) -> dict[int, Speaker]:
        """The member each call answered: the author of the last user message of the call's
        session (in its space) at or before the call; calls outside a conversation have none."""
        if not log_ids:
            return {}
        marks = ", ".join("?" for _ in log_ids)
        latest = (
            "SELECT m.{col} FROM messages m WHERE m.space_id = l.space_id "
            "AND m.session_id = l.session_id AND m.role = 'user' AND m.created_at <= l.created_at "
            "ORDER BY m.id DESC LIMIT 1"
        )
        rows = await self._db.fetchall(
            f"SELECT l.id, ({latest.format(col='author_id')}) AS member_id, "
            f"({latest.format(col='author_name')}) AS member_name "
            f"FROM api_logs l WHERE l.id IN ({marks}) AND l.session_id IS NOT NULL",
            tuple(log_ids),
        )
        return {
            row["id"]: Speaker(row["member_id"], row["member_name"])
            for row in rows
            if row["member_id"] is not None or row["member_name"] is not None
        }

    async def get(self, log_id: int) -> ApiLog | None:
        """One row by id."""
        row = await self._db.fetchone(f"SELECT {_COLUMNS} FROM api_logs WHERE id = ?", (log_id,))
        return None if row is None else _log(row)

    async def delete(self, log_id: int) -> bool:
        """Delete one row."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM api_logs WHERE id = ?", (log_id,))
            return cursor.rowcount > 0

    async def delete_matching(self, log_filter: ApiLogFilter) -> int:
        """Delete every row the filter matches; returns how many."""
        where, params = log_filter.where()
        async with self._db.transaction() as conn:
            cursor = await conn.execute(f"DELETE FROM api_logs WHERE {where}", params)
            return cursor.rowcount
