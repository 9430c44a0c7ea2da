"""The community tables: every row belongs to a space (see `bot.store.schema.tables`).

The space (`space_id`, NOT NULL, no default) is on every row: an insert that forgets it fails
instead of landing in some space silently, and purging a space removes its rows (directly, or
through the session they follow).
"""

from __future__ import annotations

from typing import Final

from bot.store.schema.ddl import (
    BLOB,
    CREATED,
    ID,
    INTEGER,
    TEXT,
    UPDATED,
    Column,
    ForeignKey,
    Index,
    References,
    Table,
)

SPACE: Final = Column("space_id", TEXT, references=References("spaces", "CASCADE"))
# Rows that follow their session (deleted with it, and with its space).
IN_SESSION: Final = ForeignKey(
    ("space_id", "session_id"), "sessions", ("space_id", "id"), "CASCADE"
)
TAG_COLUMNS: Final = (Column("tag", TEXT), CREATED)

COMMUNITY_TABLES: Final[tuple[Table, ...]] = (
    Table(
        "spaces",
        (
            Column("id", TEXT, primary_key=True),
            Column("kind", TEXT, check="kind IN ('guild', 'dm', 'local')"),
            Column("name", TEXT, default=""),
            Column("discord_id", INTEGER, null=True),
            CREATED,
            Column("left_at", TEXT, null=True),
            Column("default_model", TEXT, null=True),
            Column("language", TEXT, null=True),
            Column("persona", TEXT, null=True),
            # An IANA zone name ("Asia/Tokyo"): recall's dates, quiet hours; None: UTC only.
            Column("timezone", TEXT, null=True, since=13),
        ),
    ),
    Table(
        "sessions",
        (
            Column("id", TEXT, primary_key=True),
            SPACE,
            Column("title", TEXT, default=""),
            Column("model", TEXT, null=True),
            Column("source", TEXT, default="terminal"),
            Column("discord_channel_id", INTEGER, null=True),
            Column("discord_guild_id", INTEGER, null=True),
            Column("parent_channel_id", INTEGER, null=True),
            Column("topic", TEXT, null=True),
            Column("closed_at", TEXT, null=True),
            CREATED,
            UPDATED,
        ),
        unique=(("space_id", "id"),),
        indexes=(
            Index("ix_sessions_channel", ("space_id", "discord_channel_id", "closed_at")),
            Index("ix_sessions_parent", ("space_id", "parent_channel_id")),
            Index("ix_sessions_updated", ("space_id", "updated_at")),
            Index("ix_sessions_updated_all", ("updated_at",)),
        ),
    ),
    Table(
        "memories",
        (
            ID,
            Column("space_id", TEXT),
            Column("session_id", TEXT),
            Column("summary", TEXT),
            Column("embedding_json", TEXT, null=True),
            Column("level", INTEGER, default=0),
            Column(
                "condensed_into", INTEGER, null=True, references=References("memories", "SET NULL")
            ),
            Column("tagged_at", TEXT, null=True),
            CREATED,
        ),
        foreign_keys=(IN_SESSION,),
        indexes=(
            Index("ix_memories_session", ("space_id", "session_id", "id")),
            Index("ix_memories_untagged", ("id",), where="tagged_at IS NULL"),
        ),
    ),
    Table(
        "messages",
        (
            ID,
            Column("space_id", TEXT),
            Column("session_id", TEXT),
            Column("role", TEXT, check="role IN ('user', 'assistant', 'system')"),
            Column("content", TEXT),
            Column("author_id", TEXT, null=True),
            Column("author_name", TEXT, null=True),
            Column("discord_message_id", INTEGER, null=True),
            Column("reply_to", INTEGER, null=True),
            Column("archived_at", TEXT, null=True),
            Column("memory_id", INTEGER, null=True, references=References("memories", "SET NULL")),
            Column("tagged_at", TEXT, null=True),
            CREATED,
            # 1: written while its author had member memory off; recall must not index it.
            Column("recall_hidden", INTEGER, default=0, since=6),
            # When the background recall indexer handled it (`recall_terms`); NULL: pending.
            Column("recall_indexed_at", TEXT, null=True, since=7),
            # When "erase me" replaced its text: nothing written later may bring it back.
            Column("erased_at", TEXT, null=True, since=11),
        ),
        foreign_keys=(IN_SESSION,),
        indexes=(
            Index("ix_messages_session", ("space_id", "session_id", "id")),
            Index(
                "ix_messages_live", ("space_id", "session_id", "id"), where="archived_at IS NULL"
            ),
            Index("ix_messages_untagged", ("id",), where="tagged_at IS NULL"),
            Index(
                "ux_messages_discord",
                ("discord_message_id",),
                where="discord_message_id IS NOT NULL",
                unique=True,
            ),
            # Turns are counted from answers: a partial index keeps that read on a range scan.
            Index("ix_messages_answers", ("created_at",), where="role = 'assistant'"),
            # Recall's recent window (the space's newest messages) reads this backwards.
            Index("ix_messages_space", ("space_id", "id"), since=7),
            Index("ix_messages_unindexed", ("id",), where="recall_indexed_at IS NULL", since=7),
            # An API log row checks for an erase since its call began (few rows: erased ones).
            Index("ix_messages_erased", ("erased_at",), where="erased_at IS NOT NULL", since=11),
        ),
    ),
    Table(
        "message_tags",
        (
            ID,
            SPACE,
            Column("message_id", INTEGER, references=References("messages", "CASCADE")),
            *TAG_COLUMNS,
        ),
        indexes=(
            Index("ix_message_tags_message", ("message_id",)),
            Index("ix_message_tags_tag", ("space_id", "tag")),
        ),
    ),
    Table(
        "memory_tags",
        (
            ID,
            SPACE,
            Column("memory_id", INTEGER, references=References("memories", "CASCADE")),
            *TAG_COLUMNS,
        ),
        indexes=(
            Index("ix_memory_tags_memory", ("memory_id",)),
            Index("ix_memory_tags_tag", ("space_id", "tag")),
        ),
    ),
    Table(
        "knowledge_entries",
        (
            ID,
            SPACE,
            Column("query", TEXT),
            Column("title", TEXT, default=""),
            Column("summary", TEXT),
            Column("session_id", TEXT, null=True, references=References("sessions", "SET NULL")),
            Column("md_path", TEXT, null=True),
            CREATED,
        ),
        indexes=(Index("ix_knowledge_space", ("space_id", "id DESC")),),
    ),
    Table(
        "knowledge_sources",
        (
            ID,
            Column("entry_id", INTEGER, references=References("knowledge_entries", "CASCADE")),
            Column("title", TEXT, default=""),
            Column("url", TEXT),
        ),
        indexes=(Index("ix_knowledge_sources_entry", ("entry_id",)),),
    ),
    Table(
        "note_pages",
        (
            ID,
            SPACE,
            Column("title", TEXT),
            Column("content", TEXT, default=""),
            Column("position", INTEGER, default=0),
            Column("section", TEXT, default=""),
            CREATED,
            UPDATED,
        ),
        unique=(("space_id", "id"),),
        indexes=(Index("ix_note_pages_position", ("space_id", "position", "id")),),
    ),
    Table(
        "session_note_pages",
        (
            ID,
            Column("space_id", TEXT),
            Column("session_id", TEXT),
            Column("page_id", INTEGER),
            CREATED,
        ),
        unique=(("session_id", "page_id"),),
        foreign_keys=(
            IN_SESSION,
            ForeignKey(("space_id", "page_id"), "note_pages", ("space_id", "id"), "CASCADE"),
        ),
        indexes=(Index("ix_session_note_pages_page", ("space_id", "page_id")),),
    ),
    Table(
        "attachments",
        (
            Column("id", TEXT, primary_key=True),
            Column("space_id", TEXT),
            Column("session_id", TEXT),
            Column("filename", TEXT),
            Column("content_type", TEXT, default=""),
            Column("size", INTEGER),
            Column("data", BLOB),
            Column("source_url", TEXT, null=True),
            CREATED,
        ),
        foreign_keys=(IN_SESSION,),
        indexes=(Index("ix_attachments_session", ("space_id", "session_id")),),
    ),
    Table(
        "topic_channels",
        (
            Column("channel_id", INTEGER, primary_key=True),
            SPACE,
            Column("guild_id", INTEGER, null=True),
            Column("enabled", INTEGER, default=0),
            Column("idle_minutes", INTEGER, default=120),
            Column("check_interval_minutes", INTEGER, default=10),
            Column("active_start", TEXT, default="09:00"),
            Column("active_end", TEXT, default="23:00"),
            Column("timezone", TEXT, default="UTC"),
            Column("max_posts_per_day", INTEGER, default=3),
            Column("cron", TEXT, null=True),
            Column("language", TEXT, null=True),
            Column("persona", TEXT, default=""),
            Column("last_human_at", TEXT, null=True),
            UPDATED,
        ),
        indexes=(Index("ix_topic_channels_space", ("space_id", "channel_id")),),
    ),
    Table(
        "topic_posts",
        (
            ID,
            SPACE,
            Column("channel_id", INTEGER),
            Column("kind", TEXT, default="idle"),
            Column("topic", TEXT),
            Column("words_json", TEXT, default="[]"),
            Column("content", TEXT, default=""),
            Column("discord_message_id", INTEGER, null=True),
            Column("posted_at", TEXT),
            # When a person first wrote in the channel (or its threads) within the opener's
            # reply window; None: not answered (yet).
            Column("answered_at", TEXT, null=True, since=16),
        ),
        indexes=(
            Index("ix_topic_posts_channel", ("space_id", "channel_id", "posted_at")),
            Index(
                "ix_topic_posts_message",
                ("discord_message_id",),
                where="discord_message_id IS NOT NULL",
            ),
        ),
    ),
    Table(
        "word_pool",
        (
            SPACE,
            Column("channel_id", INTEGER),
            Column("word", TEXT),
            Column("count", INTEGER, default=1),
            Column("last_seen", TEXT),
        ),
        primary_key=("space_id", "channel_id", "word"),
        indexes=(Index("ix_word_pool_recent", ("space_id", "channel_id", "last_seen")),),
    ),
    # One row per tool call a turn ran; bounded arguments, short error, sources.
    Table(
        "tool_calls",
        (
            ID,
            Column("space_id", TEXT),
            Column("session_id", TEXT),
            Column("message_id", INTEGER, null=True, references=References("messages", "SET NULL")),
            Column("call_id", TEXT, default=""),
            Column("tool", TEXT),
            Column("arguments_json", TEXT, default="{}"),
            Column("ok", INTEGER, check="ok IN (0, 1)"),
            Column("error", TEXT, null=True),
            Column("sources_json", TEXT, default="[]"),
            Column("duration_ms", INTEGER, null=True),
            CREATED,
            # A call that asked its member first: allowed, denied, timeout or unasked (nobody
            # could be asked), and the Discord user id of who decided.
            Column("approval", TEXT, null=True, since=15),
            Column("approved_by", TEXT, null=True, since=15),
        ),
        foreign_keys=(IN_SESSION,),
        indexes=(
            Index("ix_tool_calls_session", ("space_id", "session_id", "message_id")),
            Index("ix_tool_calls_created", ("created_at",)),
            Index("ix_tool_calls_space_created", ("space_id", "created_at")),
        ),
    ),
    # What the bot can see of its servers' channels, in the server's space.
    Table(
        "directory_channels",
        (
            Column("channel_id", INTEGER, primary_key=True),
            SPACE,
            Column("name", TEXT),
            Column("kind", TEXT),
            Column("parent_id", INTEGER, null=True),
            Column("position", INTEGER, default=0),
            UPDATED,
        ),
        indexes=(Index("ix_directory_channels_space", ("space_id", "position", "channel_id")),),
        since=5,
    ),
    # Member memory: facts about a member of the space (Discord user id, or the local user),
    # shown in that member's own turns; in other members' only when its owner shared it.
    Table(
        "member_facts",
        (
            ID,
            SPACE,
            Column("member_id", TEXT),
            Column("member_name", TEXT, default=""),
            Column("fact", TEXT),
            Column("shared", INTEGER, default=0, check="shared IN (0, 1)"),
            Column("source", TEXT, check="source IN ('tool', 'request')"),
            Column("session_id", TEXT, null=True, references=References("sessions", "SET NULL")),
            CREATED,
            # The member's message the fact was taken from (forgetting the fact blanks it).
            Column("message_id", INTEGER, null=True, since=13),
        ),
        indexes=(
            Index("ix_member_facts_member", ("space_id", "member_id", "id")),
            Index("ix_member_facts_shared", ("space_id", "id"), where="shared = 1"),
        ),
        since=6,
    ),
    # A member's memory switch in a space; no row means on.
    Table(
        "member_memory",
        (
            SPACE,
            Column("member_id", TEXT),
            Column("enabled", INTEGER, default=1, check="enabled IN (0, 1)"),
            Column("switched_at", TEXT),
        ),
        primary_key=("space_id", "member_id"),
        since=6,
    ),
    # Recall's term index (bot/memory/recall_index.py fills it in the background): one row per
    # indexed message (same id), its words pre-tokenised — Japanese words by Janome, English
    # stems, the speaker's name, the date — searched by bm25 (SQLite FTS5 unicode61) or a
    # tsvector GIN index (PostgreSQL), see `bot.store.schema.fulltext`.
    Table(
        "recall_terms",
        (
            Column("id", INTEGER, primary_key=True, references=References("messages", "CASCADE")),
            Column("space_id", TEXT),
            Column("terms", TEXT),
        ),
        since=7,
    ),
    # Recall's message embeddings (bot/memory/recall_embed.py fills them in the background):
    # one unit float32 vector per visible message and embedding model, read space by space.
    Table(
        "message_embeddings",
        (
            SPACE,
            Column("message_id", INTEGER, references=References("messages", "CASCADE")),
            Column("model", TEXT),
            Column("vector", BLOB),
            CREATED,
        ),
        primary_key=("message_id", "model"),
        indexes=(Index("ix_message_embeddings_space", ("space_id", "model", "message_id")),),
        since=10,
    ),
    # Who a word of a channel's pool came from (for "erase me"); trimmed with the pool.
    Table(
        "word_pool_authors",
        (
            SPACE,
            Column("channel_id", INTEGER),
            Column("word", TEXT),
            Column("author_id", TEXT),
        ),
        primary_key=("space_id", "channel_id", "word", "author_id"),
        indexes=(Index("ix_word_pool_authors_author", ("space_id", "author_id")),),
        since=11,
    ),
    # A number every note write of the space draws anew: a cached outline is read again only
    # when it changed (another process wrote), not every time it ages.
    Table(
        "note_versions",
        (SPACE, Column("version", INTEGER, default=0)),
        primary_key=("space_id",),
        since=12,
    ),
    # Tokens the turns of a space used on one of its days, per member and in all (member_id
    # ''): `reserved` holds the estimates of calls under way, settled to `used` when they end.
    Table(
        "token_usage",
        (
            SPACE,
            Column("day", TEXT),
            Column("member_id", TEXT),
            Column("used", INTEGER, default=0),
            Column("reserved", INTEGER, default=0),
            Column("calls", INTEGER, default=0),
            UPDATED,
        ),
        primary_key=("space_id", "day", "member_id"),
        since=14,
    ),
)
