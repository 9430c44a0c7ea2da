"""The store: one database (SQLite or PostgreSQL) and its repositories, built here only.

Rooms, each depending only on the ones after it: this face → `reads/` (the admin page's read
models) → `repos/` (one repository per aggregate) → `engine/` (database, connections,
dialects, migrations runner, backup, copy) → `schema/` (the migration history, both engines).
`spaces` (the tenancy vocabulary), `shards` and `transfer` (export/import) sit beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bot.store.engine.database import Database
    from bot.store.reads.activity import ActivityRepository
    from bot.store.reads.conversations import ConversationRepository
    from bot.store.reads.recall import RecallRepository
    from bot.store.reads.search import SearchRepository
    from bot.store.repos.admin_sessions import AdminSessionRepository
    from bot.store.repos.api_logs import ApiLogRepository
    from bot.store.repos.app_settings import AppSettingsRepository
    from bot.store.repos.attachments import AttachmentRepository
    from bot.store.repos.directory import DirectoryRepository
    from bot.store.repos.knowledge import KnowledgeRepository
    from bot.store.repos.local_kb_docs import LocalKBDocRepository
    from bot.store.repos.member_facts import MemberFactRepository
    from bot.store.repos.memories import MemoryRepository
    from bot.store.repos.message_embeddings import MessageEmbeddingRepository
    from bot.store.repos.messages import MessageRepository
    from bot.store.repos.model_presets import ModelPresetRepository
    from bot.store.repos.notes import NoteRepository
    from bot.store.repos.recall_terms import RecallTermRepository
    from bot.store.repos.sessions import SessionRepository
    from bot.store.repos.space_records import SpaceRepository
    from bot.store.repos.stats import StatsRepository
    from bot.store.repos.tags import TagRepository
    from bot.store.repos.token_factors import TokenFactorRepository
    from bot.store.repos.token_usage import TokenUsageRepository
    from bot.store.repos.tool_calls import ToolCallRepository
    from bot.store.repos.topics import TopicRepository
    from bot.store.repos.word_pool import WordPoolRepository


@dataclass
class Repositories:
    """One repository per aggregate, all over the same database."""

    spaces: SpaceRepository
    sessions: SessionRepository
    messages: MessageRepository
    memories: MemoryRepository
    api_logs: ApiLogRepository
    attachments: AttachmentRepository
    app_settings: AppSettingsRepository
    tags: TagRepository
    topics: TopicRepository
    presets: ModelPresetRepository
    stats: StatsRepository
    admin_sessions: AdminSessionRepository
    word_pool: WordPoolRepository
    token_factors: TokenFactorRepository
    tool_calls: ToolCallRepository
    notes: NoteRepository
    knowledge: KnowledgeRepository
    local_kb_docs: LocalKBDocRepository
    activity: ActivityRepository
    search: SearchRepository
    recall: RecallRepository
    conversation_reads: ConversationRepository
    directory: DirectoryRepository
    member_facts: MemberFactRepository
    recall_terms: RecallTermRepository
    message_embeddings: MessageEmbeddingRepository
    token_usage: TokenUsageRepository

    @classmethod
    def over(cls, db: Database) -> Repositories:
        """Repositories sharing `db`."""
        # Here, not at the top: the settings import `bot.store.spaces`, not every repository.
        from bot.store.reads.activity import ActivityRepository
        from bot.store.reads.conversations import ConversationRepository
        from bot.store.reads.recall import RecallRepository
        from bot.store.reads.search import SearchRepository
        from bot.store.repos.admin_sessions import AdminSessionRepository
        from bot.store.repos.api_logs import ApiLogRepository
        from bot.store.repos.app_settings import AppSettingsRepository
        from bot.store.repos.attachments import AttachmentRepository
        from bot.store.repos.directory import DirectoryRepository
        from bot.store.repos.knowledge import KnowledgeRepository
        from bot.store.repos.local_kb_docs import LocalKBDocRepository
        from bot.store.repos.member_facts import MemberFactRepository
        from bot.store.repos.memories import MemoryRepository
        from bot.store.repos.message_embeddings import MessageEmbeddingRepository
        from bot.store.repos.messages import MessageRepository
        from bot.store.repos.model_presets import ModelPresetRepository
        from bot.store.repos.notes import NoteRepository
        from bot.store.repos.recall_terms import RecallTermRepository
        from bot.store.repos.sessions import SessionRepository
        from bot.store.repos.space_records import SpaceRepository
        from bot.store.repos.stats import StatsRepository
        from bot.store.repos.tags import TagRepository
        from bot.store.repos.token_factors import TokenFactorRepository
        from bot.store.repos.token_usage import TokenUsageRepository
        from bot.store.repos.tool_calls import ToolCallRepository
        from bot.store.repos.topics import TopicRepository
        from bot.store.repos.word_pool import WordPoolRepository

        return cls(
            spaces=SpaceRepository(db),
            sessions=SessionRepository(db),
            messages=MessageRepository(db),
            memories=MemoryRepository(db),
            api_logs=ApiLogRepository(db),
            attachments=AttachmentRepository(db),
            app_settings=AppSettingsRepository(db),
            tags=TagRepository(db),
            topics=TopicRepository(db),
            presets=ModelPresetRepository(db),
            stats=StatsRepository(db),
            admin_sessions=AdminSessionRepository(db),
            word_pool=WordPoolRepository(db),
            token_factors=TokenFactorRepository(db),
            tool_calls=(tool_calls := ToolCallRepository(db)),
            notes=NoteRepository(db),
            knowledge=KnowledgeRepository(db),
            local_kb_docs=LocalKBDocRepository(db),
            activity=ActivityRepository(db),
            search=SearchRepository(db),
            recall=RecallRepository(db),
            conversation_reads=ConversationRepository(db, tool_calls),
            directory=DirectoryRepository(db),
            member_facts=MemberFactRepository(db),
            recall_terms=RecallTermRepository(db),
            message_embeddings=MessageEmbeddingRepository(db),
            token_usage=TokenUsageRepository(db),
        )
