"""Services: every long-lived resource, opened once by the composition root and passed in."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.chat.context import ContextBuilder
from bot.chat.engine import ChatEngine
from bot.chat.hooks import TurnResult
from bot.chat.summarize import Summarizer
from bot.config import RuntimeSettings, Settings
from bot.llm.gateway import BackendFactory, LLMGateway, RetryPolicy, default_backend_factory
from bot.memory.japanese import JapaneseAnalyzer
from bot.memory.knowledge import KnowledgeService, SaveKnowledgeHook
from bot.memory.layers import default_layer_slots
from bot.memory.local_kb import LocalKnowledgeBase
from bot.memory.notes import NotesService
from bot.memory.tagging import Tagger
from bot.memory.word_pool import WordPool, load_recent_texts
from bot.store.admin_sessions import AdminSessionRepository
from bot.store.api_logs import ApiLogRepository
from bot.store.app_settings import AppSettingsRepository
from bot.store.attachments import AttachmentRepository
from bot.store.db import Database
from bot.store.memories import Memory, MemoryRepository
from bot.store.messages import MessageRepository
from bot.store.model_presets import ModelPresetRepository
from bot.store.sessions import SessionRepository
from bot.store.stats import StatsRepository
from bot.store.tags import TagRepository
from bot.store.topics import TopicRepository
from bot.store.transfer import SessionTransfer
from bot.tools.builtin import ToolDeps, build_tool_deps, register_builtin_tools
from bot.tools.core import ToolRegistry
from bot.tools.knowledge_tools import register_knowledge_tools
from bot.tools.mcp.status import McpTools, NoMcp
from bot.tools.notes_tools import NotesUpdatedHook, register_notes_tools
from bot.tools.safe_http import FetchPolicy
from bot.tools.web_search import SearchFn
from bot.topics.picker import TopicPicker
from bot.topics.service import TopicService
from bot.utils.tasks import BackgroundTasks

if TYPE_CHECKING:
    from bot.tools.mcp.client import McpTuning

log = logging.getLogger(__name__)


@dataclass
class Repositories:
    """One repository per aggregate, all over the same database."""

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

    @classmethod
    def over(cls, db: Database) -> Repositories:
        """Repositories sharing `db`."""
        return cls(
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
        )


@dataclass
class ServiceOptions:
    """Seams for tests and benchmarks; production uses the defaults."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    backend_factory: BackendFactory = default_backend_factory
    builtin_tools: bool = True
    fetch_policy: FetchPolicy | None = None
    search_fn: SearchFn | None = None
    parse_timeout: float | None = None
    mcp_tuning: McpTuning | None = None
    mcp_startup_wait: float = 5.0
    warm_start: bool = True


@dataclass
class Services:
    """What the Discord bot, the admin API and the terminal chat share."""

    settings: RuntimeSettings
    db: Database
    repos: Repositories
    tasks: BackgroundTasks
    gateway: LLMGateway
    registry: ToolRegistry
    context: ContextBuilder
    summarizer: Summarizer
    engine: ChatEngine
    analyzer: JapaneseAnalyzer
    word_pool: WordPool
    tagger: Tagger
    local_kb: LocalKnowledgeBase
    topics: TopicService
    notes: NotesService
    knowledge: KnowledgeService
    tool_deps: ToolDeps | None
    mcp: McpTools
    transfer: SessionTransfer


@asynccontextmanager
async def open_services(
    settings: Settings, options: ServiceOptions | None = None
) -> AsyncIterator[Services]:
    """Open the database and everything built on it; close all of it on exit."""
    opts = options or ServiceOptions()
    async with AsyncExitStack() as stack:
        db = await Database.open(settings.db_path)
        stack.push_async_callback(db.close)
        repos = Repositories.over(db)
        runtime = RuntimeSettings(settings, repos.app_settings)
        await runtime.load()
        tasks = BackgroundTasks()
        stack.push_async_callback(tasks.close)
        gateway = LLMGateway(
            runtime, repos.api_logs, retry=opts.retry, backend_factory=opts.backend_factory
        )
        stack.push_async_callback(gateway.close)
        registry = ToolRegistry()
        tool_deps: ToolDeps | None = None
        if opts.builtin_tools:
            tool_deps = build_tool_deps(
                runtime,
                repos.attachments,
                policy=opts.fetch_policy,
                search_fn=opts.search_fn,
                parse_timeout=opts.parse_timeout,
            )
            stack.push_async_callback(tool_deps.close)
            register_builtin_tools(registry, tool_deps)
        analyzer = JapaneseAnalyzer()
        stack.callback(analyzer.close)
        word_pool = WordPool(analyzer)
        tagger = Tagger(analyzer, repos.tags, gateway, lambda: runtime().tagging_mode)
        local_kb = LocalKnowledgeBase(runtime().kb_dir, db, gateway, analyzer, runtime)
        topics = TopicService(repos.topics, TopicPicker(word_pool, repos.tags), gateway, runtime)
        await topics.load()
        notes = NotesService(db)
        knowledge = KnowledgeService(
            db, gateway, lambda: runtime().kb_dir, runtime, on_files_changed=local_kb.invalidate
        )
        register_notes_tools(registry, notes)
        register_knowledge_tools(registry, knowledge)
        mcp: McpTools = NoMcp()
        if runtime().mcp_config is not None:
            from bot.tools.mcp.manager import McpManager

            mcp = McpManager(
                registry,
                runtime,
                repos.api_logs,
                tuning=opts.mcp_tuning,
                startup_wait=opts.mcp_startup_wait,
            )
        stack.push_async_callback(mcp.close)
        await mcp.start()
        context = ContextBuilder(
            repos.messages, repos.memories, default_layer_slots(knowledge, notes, local_kb.search)
        )

        async def tag_summary(memory: Memory) -> None:
            await tagger.tag_memory(memory.id, memory.summary, session_id=memory.session_id)

        summarizer = Summarizer(
            runtime, gateway, repos.messages, repos.memories, on_memory=tag_summary
        )
        engine = ChatEngine(
            settings=runtime,
            gateway=gateway,
            registry=registry,
            sessions=repos.sessions,
            messages=repos.messages,
            context=context,
            tasks=tasks,
        )

        async def summarize_after_turn(result: TurnResult) -> None:
            await summarizer.maybe_summarize(result.session_id)

        async def remember_words_and_tags(result: TurnResult) -> None:
            messages = (result.user_message, result.answer)
            await word_pool.add_texts([message.content for message in messages])
            for message in messages:
                await tagger.tag_message(message.id, message.content, session_id=result.session_id)

        engine.add_tool_hook(SaveKnowledgeHook(knowledge))
        engine.add_tool_hook(NotesUpdatedHook())
        engine.add_turn_hook(summarize_after_turn)
        engine.add_turn_hook(remember_words_and_tags)
        if opts.warm_start:
            # Before any turn can add words, so the rebuilt pool is exactly the one before.
            await word_pool.reseed(await load_recent_texts(db))
            tasks.spawn(tagger.backfill(), name="tag-backfill")
        yield Services(
            settings=runtime,
            db=db,
            repos=repos,
            tasks=tasks,
            gateway=gateway,
            registry=registry,
            context=context,
            summarizer=summarizer,
            engine=engine,
            analyzer=analyzer,
            word_pool=word_pool,
            tagger=tagger,
            local_kb=local_kb,
            topics=topics,
            notes=notes,
            knowledge=knowledge,
            tool_deps=tool_deps,
            mcp=mcp,
            transfer=SessionTransfer(
                db, repos.sessions, repos.messages, repos.memories, repos.attachments
            ),
        )
