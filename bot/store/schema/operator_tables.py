"""The operator's tables: shared by every space on purpose (see `bot.store.schema.tables`).

Settings, model presets (connections), token estimator factors, the local knowledge base's
documents, admin sessions; API logs carry the space of the call when there is one.
"""

from __future__ import annotations

from typing import Final

from bot.store.schema.ddl import CREATED, ID, INTEGER, REAL, TEXT, UPDATED, Column, Index, Table

OPERATOR_TABLES: Final[tuple[Table, ...]] = (
    Table(
        "local_knowledge_docs",
        (
            ID,
            Column("path", TEXT, unique=True),
            Column("title", TEXT, default=""),
            Column("content_hash", TEXT),
            Column("embedding_json", TEXT, null=True),
            Column("embed_model", TEXT, null=True),
            UPDATED,
        ),
    ),
    Table(
        "app_settings",
        (Column("key", TEXT, primary_key=True), Column("value", TEXT), UPDATED),
    ),
    Table(
        "model_presets",
        (
            ID,
            Column("label", TEXT),
            Column("value", TEXT, unique=True),
            CREATED,
            # A preset is a connection: its own address and key (both NULL: the global ones).
            Column("api_base", TEXT, null=True, since=5),
            Column("api_key", TEXT, null=True, since=5),
            # 1: added at start for LLM_MODEL and never edited; it follows LLM_MODEL.
            Column("seeded", INTEGER, default=0, since=9),
        ),
    ),
    Table(
        "model_token_factors",
        (
            Column("model", TEXT, primary_key=True),
            Column("factor", REAL),
            Column("samples", INTEGER, default=0),
            Column("partial_counts", INTEGER, default=0),
            UPDATED,
        ),
    ),
    Table(
        "api_logs",
        (
            ID,
            Column("session_id", TEXT, null=True),
            Column("model", TEXT),
            Column("purpose", TEXT, default="chat"),
            Column("request_json", TEXT),
            Column("response_text", TEXT, null=True),
            Column("error", TEXT, null=True),
            Column("latency_ms", INTEGER),
            Column("prompt_tokens", INTEGER, null=True),
            Column("completion_tokens", INTEGER, null=True),
            Column("cost", REAL, null=True),
            CREATED,
            Column("space_id", TEXT, null=True),
            # 1: a token count is the project's estimate (the server sent none for it).
            Column("tokens_estimated", INTEGER, default=0, since=8),
        ),
        indexes=(
            Index("ix_api_logs_session", ("session_id", "id")),
            Index("ix_api_logs_model", ("model", "id")),
            Index("ix_api_logs_created", ("created_at",)),
            Index("ix_api_logs_space", ("space_id", "id")),
            Index("ix_api_logs_space_created", ("space_id", "created_at")),
        ),
    ),
    Table(
        "admin_sessions",
        (Column("token_hash", TEXT, primary_key=True), CREATED, Column("expires_at", TEXT)),
    ),
)
