"""Services: every long-lived resource, opened once by the composition root and passed in."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.chat.attachments import AttachmentIntake
from bot.chat.context import ContextBuilder
from bot.chat.daily_budget import Clock, TurnBudget
from bot.chat.engine import ChatEngine
from bot.chat.layers import MemberFactsLayer, RelatedMemoriesLayer, default_layers
from bot.chat.pending import PendingTurns
from bot.chat.sessions import ConversationSessions
from bot.chat.summarize import Summarizer
from bot.chat.tool_log import RecordApprovalHook, RecordToolCallHook
from bot.chat.warmup import Warmable, warm_up
from bot.config import RuntimeSettings, Settings
from bot.llm.gateway import (
    BackendFactory,
    Endpoint,
    LLMGateway,
    RetryPolicy,
    default_backend_factory,
)
from bot.memory.erase_followups import (
    drop_what_they_brought,
    resummarize_after_blank,
    scrub_after_blank,
)
from bot.memory.japanese import JapaneseAnalyzer
from bot.memory.knowledge import KnowledgeService, SaveKnowledgeHook
from bot.memory.local_kb import LocalKnowledgeBase
from bot.memory.member_memory import MemberMemory
from bot.memory.notes import NotesService
from bot.memory.recall import RecallService
from bot.memory.recall_embed import RecallEmbedder, SemanticRecall
from bot.memory.recall_index import RecallIndexer
from bot.memory.spaces import SpaceService
from bot.memory.tagging import Tagger
from bot.memory.word_pool import WordPool
from bot.ops.probes import MODEL_KEYS, build_readiness
from bot.ops.readiness import Readiness
from bot.ops.settings_sync import stored_settings_probe
from bot.prompts import prompts_for
from bot.prompts.ui_text import ui_text
from bot.runtime.heap import refreeze_if_frozen
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.erase.operations import MemberErasure
from bot.store.repos.memories import Memory
from bot.store.transfer import SessionTransfer
from bot.tools.builtin import ToolDeps, build_tool_deps, register_builtin_tools
from bot.tools.core import ToolRegistry
from bot.tools.kb_tools import register_kb_tools
from bot.tools.knowledge_tools import register_knowledge_tools
from bot.tools.mcp.status import McpTools, NoMcp
from bot.tools.member_tools import register_member_tools
from bot.tools.notes_tools import NotesUpdatedHook, register_notes_tools
from bot.tools.pdf import attachment_key
from bot.tools.recall_tool import register_recall_tool
from bot.tools.safe_http import FetchPolicy
from bot.tools.web_search import SearchFn
from bot.topics.picker import TopicPicker
from bot.topics.service import TopicService
from bot.turn.hooks import TurnResult
from bot.utils.live_log import LiveLog
from bot.utils.tasks import BackgroundTasks

if TYPE_CHECKING:
    from bot.tools.mcp.client import McpTuning

log = logging.getLogger(__name__)


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
    # The daily budgets' clock (a day's end); None: the wall clock.
    budget_clock: Clock | None = None


@dataclass
class Services:
    """What the Discord bot, the admin API and the terminal chat share.

    Everything of a community is scoped by its space (`bot.store.spaces`): pass the space id
    of the conversation (guild, DM user or the local space) to every service call.
    """

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
    spaces: SpaceService
    members: MemberMemory
    tool_deps: ToolDeps | None
    mcp: McpTools
    transfer: SessionTransfer
    conversations: ConversationSessions
    attachment_intake: AttachmentIntake
    readiness: Readiness
    live_log: LiveLog


@dataclass
class _Core:
    """What everything else is built on: storage, settings, background tasks, LLM, tools."""

    db: Database
    repos: Repositories
    runtime: RuntimeSettings
    tasks: BackgroundTasks
    gateway: LLMGateway
    registry: ToolRegistry


@dataclass
class _Memory:
    """What remembers across turns (opened together, handed on together)."""

    analyzer: JapaneseAnalyzer
    word_pool: WordPool
    tagger: Tagger
    local_kb: LocalKnowledgeBase
    notes: NotesService
    knowledge: KnowledgeService
    spaces: SpaceService
    members: MemberMemory
    recall: RecallService
    recall_index: RecallIndexer
    recall_embed: RecallEmbedder


async def _open_core(stack: AsyncExitStack, settings: Settings, opts: ServiceOptions) -> _Core:
    """The database and its repositories, the settings in effect, tasks, the LLM gateway."""
    db = await Database.connect(settings.database(), local_space=settings.local_space_id)
    stack.push_async_callback(db.close)
    repos = Repositories.over(db)
    runtime = RuntimeSettings(settings, repos.app_settings)
    await runtime.load()
    await repos.presets.seed(runtime().llm_model)
    # SQLite's spaces migration made the local space's row; a PostgreSQL schema starts empty.
    await repos.spaces.ensure(settings.local_space_id)
    tasks = BackgroundTasks()

    async def connection_of(model: str) -> Endpoint | None:
        preset = await repos.presets.by_value(model)
        if preset is None or (preset.api_base is None and preset.api_key is None):
            return None
        return Endpoint(preset.api_base, preset.api_key)

    gateway = LLMGateway(
        runtime,
        repos.api_logs,
        retry=opts.retry,
        backend_factory=opts.backend_factory,
        token_factors=repos.token_factors,
        endpoints=connection_of,
    )
    stack.push_async_callback(gateway.close)
    await gateway.load_token_factors()
    return _Core(db, repos, runtime, tasks, gateway, ToolRegistry())


def _open_builtin_tools(
    stack: AsyncExitStack, core: _Core, opts: ServiceOptions
) -> ToolDeps | None:
    """The built-in web, page, PDF and file tools, registered (None when the options omit them)."""
    if not opts.builtin_tools:
        return None
    tool_deps = build_tool_deps(
        core.runtime,
        core.repos.attachments,
        policy=opts.fetch_policy,
        search_fn=opts.search_fn,
        parse_timeout=opts.parse_timeout,
    )
    stack.push_async_callback(tool_deps.close)
    register_builtin_tools(core.registry, tool_deps)
    return tool_deps


def _open_memory(
    stack: AsyncExitStack,
    core: _Core,
    tool_deps: ToolDeps | None,
    analyzer: JapaneseAnalyzer | None,
) -> _Memory:
    """Word analysis (a new analyzer unless given one), the word pool, tagging, the local KB,
    notes and knowledge."""
    runtime, gateway = core.runtime, core.gateway
    if analyzer is None:
        analyzer = JapaneseAnalyzer()
        stack.push_async_callback(analyzer.close)
    local_kb = LocalKnowledgeBase(
        runtime().kb_dir,
        core.repos.local_kb_docs,
        gateway,
        analyzer,
        runtime,
        on_synced=refreeze_if_frozen,
    )
    knowledge = KnowledgeService(
        core.repos.knowledge,
        gateway,
        lambda: runtime().kb_dir,
        runtime,
        on_files_changed=local_kb.invalidate,
        read_page=tool_deps.page_text if tool_deps is not None else None,
    )
    notes = NotesService(core.repos.notes, tasks=core.tasks)
    return _Memory(
        analyzer=analyzer,
        word_pool=WordPool(analyzer, core.repos.word_pool),
        tagger=Tagger(analyzer, core.repos.tags, gateway, lambda: runtime().tagging_mode),
        local_kb=local_kb,
        notes=notes,
        knowledge=knowledge,
        spaces=SpaceService(core.repos.spaces, notes, knowledge),
        members=MemberMemory(
            core.repos.member_facts,
            MemberErasure(core.db),
            placeholder=lambda: prompts_for(runtime().language)["member_erased_message"],
            forgotten=lambda: prompts_for(runtime().language)["member_forgotten_message"],
            neutral_title=lambda: ui_text(runtime().language).thread_fallback,
        ),
        recall=RecallService(
            core.repos.recall,
            SemanticRecall(gateway, core.repos.message_embeddings, runtime),
            zone_of=core.repos.token_usage.timezone,
        ),
        recall_index=RecallIndexer(analyzer, core.repos.recall_terms),
        recall_embed=RecallEmbedder(gateway, core.repos.message_embeddings, runtime),
    )


def _follow_erasures(core: _Core, memory: _Memory, tool_deps: ToolDeps | None) -> None:
    """What an erase or a forget sets off in the background (`bot.memory.erase_followups`)."""
    cache = tool_deps.doc_cache if tool_deps is not None else None

    def forget_attachment(space: str, session_id: str, attachment_id: str) -> None:
        if cache is not None:
            cache.forget(attachment_key(space, session_id, attachment_id))

    drop_what_they_brought(memory.members, memory.knowledge, forget_attachment)
    scrub_after_blank(memory.members, core.tasks, core.db)


async def _open_topics(core: _Core, memory: _Memory) -> TopicService:
    """Idle chats and periodic posts, with the configured channels loaded."""
    picker = TopicPicker(memory.word_pool, core.repos.tags)
    topics = TopicService(
        core.repos.topics, picker, core.gateway, core.runtime, pool=memory.word_pool
    )
    await topics.load()

    async def reload_after_purge(_space: str) -> None:
        await topics.reload()

    memory.spaces.add_purge_listener(reload_after_purge)
    return topics


async def _start_mcp(stack: AsyncExitStack, core: _Core, opts: ServiceOptions) -> McpTools:
    """The MCP servers of MCP_CONFIG, their tools registered as they connect (else none)."""
    mcp: McpTools = NoMcp()
    if core.runtime().mcp_config is not None:
        from bot.tools.mcp.manager import McpManager

        mcp = McpManager(
            core.registry,
            core.runtime,
            core.repos.api_logs,
            tuning=opts.mcp_tuning,
            startup_wait=opts.mcp_startup_wait,
        )
    stack.push_async_callback(mcp.close)
    await mcp.start()
    return mcp


def _build_engine(
    core: _Core, memory: _Memory, budget: TurnBudget
) -> tuple[ContextBuilder, Summarizer, ChatEngine]:
    """The context builder, the summariser and the engine that uses both."""
    repos = core.repos

    async def tag_summary(summary: Memory) -> None:
        await memory.tagger.tag_memory(
            summary.space_id, summary.id, summary.summary, session_id=summary.session_id
        )

    # The turns waiting for their answer, which the summariser must leave live.
    pending = PendingTurns()
    summarizer = Summarizer(
        core.runtime,
        core.gateway,
        repos.messages,
        repos.memories,
        on_memory=tag_summary,
        pending=pending,
    )

    resummarize_after_blank(memory.members, core.tasks, summarizer.maybe_summarize)
    context = ContextBuilder(
        repos.messages,
        repos.memories,
        default_layers(memory.knowledge, memory.notes, memory.local_kb.search),
        on_memory_cut=summarizer.request_condense,
        after_memory=[RelatedMemoriesLayer(memory.recall), MemberFactsLayer(memory.members)],
    )
    engine = ChatEngine(
        settings=core.runtime,
        gateway=core.gateway,
        registry=core.registry,
        sessions=repos.sessions,
        messages=repos.messages,
        spaces=repos.spaces,
        context=context,
        tasks=core.tasks,
        members=memory.members,
        pending=pending,
        budget=budget,
    )
    return context, summarizer, engine


def _register_memory_tools(core: _Core, memory: _Memory) -> None:
    """The tools over the space's memory: notes, knowledge, member facts, recall, local KB."""
    register_notes_tools(core.registry, memory.notes)
    register_knowledge_tools(core.registry, memory.knowledge, core.runtime)
    register_member_tools(core.registry, memory.members)
    register_recall_tool(core.registry, memory.recall, core.runtime)
    register_kb_tools(core.registry, memory.local_kb, core.runtime)


def _add_engine_hooks(
    engine: ChatEngine,
    memory: _Memory,
    summarizer: Summarizer,
    topics: TopicService,
    repos: Repositories,
) -> None:
    """What runs around tool calls and after each turn: the tool call log, knowledge, notes,
    summaries, tags,
    and the word pool of the channel a conversation hangs off (where topics are enabled)."""

    async def summarize_after_turn(result: TurnResult) -> None:
        await summarizer.maybe_summarize(result.space_id, result.session_id)

    async def remember_words_and_tags(result: TurnResult) -> None:
        messages = (result.user_message, result.answer)
        # The answer's words count as the asker's: an erase takes both.
        asker = result.user_message.author_id
        await topics.feed_conversation(
            result.space_id,
            result.pool_channel_id,
            [message.content for message in messages],
            [asker, asker],
            [message.id for message in messages],
        )
        await memory.tagger.tag_messages(
            result.space_id,
            [(message.id, message.content) for message in messages],
            session_id=result.session_id,
        )

    engine.add_tool_hook(RecordToolCallHook(repos.tool_calls))
    engine.add_tool_hook(RecordApprovalHook(repos.api_logs))
    engine.add_tool_hook(SaveKnowledgeHook(memory.knowledge))
    engine.add_tool_hook(NotesUpdatedHook())

    async def index_for_recall(_result: TurnResult) -> None:
        # The turn's messages and whatever else is pending (imports), one batch at a time.
        await memory.recall_index.backfill()

    async def embed_for_recall(_result: TurnResult) -> None:
        # Nothing without EMBED_MODEL; after a failure, again once its retry time has passed.
        await memory.recall_embed.backfill()

    engine.add_turn_hook(summarize_after_turn)
    engine.add_turn_hook(remember_words_and_tags)
    engine.add_turn_hook(index_for_recall)
    engine.add_turn_hook(embed_for_recall)


def _open_readiness(core: _Core, mcp: McpTools) -> Readiness:
    """Readiness of the model, embeddings, database and MCP; re-checked when the model changes."""

    async def used() -> set[str]:
        """The models in use: LLM_MODEL and every server's default."""
        spaces = await core.repos.spaces.list()
        defaults = {space.default_model for space in spaces if space.default_model}
        return {core.runtime().llm_model, *defaults}

    readiness = build_readiness(
        core.runtime, core.db, core.gateway, mcp, presets=core.repos.presets.list, used=used
    )
    readiness.register("settings", stored_settings_probe(core.runtime))

    async def recheck(follow: bool) -> None:
        if follow:  # the configured model stays listed (the seeded connection follows it)
            await core.repos.presets.seed(core.runtime().llm_model)
        await readiness.check(["model", "connections", "embeddings"])

    def model_changed(_settings: Settings, keys: frozenset[str]) -> None:
        # A reload may also have left a stored value out (or taken one back in).
        core.tasks.spawn(readiness.check(["settings"]), name="readiness-settings")
        if keys & MODEL_KEYS:
            core.tasks.spawn(recheck("llm_model" in keys), name="readiness-model")

    core.runtime.subscribe(model_changed)
    return readiness


async def _warm_up(core: _Core, memory: _Memory, opts: ServiceOptions) -> None:
    """What the first turn would load on the event loop: the LLM backend, the Janome
    dictionary, the text catalogues (skipped without `warm_start`: tests that need none)."""
    if opts.warm_start:
        parts: dict[str, Warmable] = {"llm": core.gateway, "analyzer": memory.analyzer}
        await warm_up(parts, core.runtime().language)


async def _settle(task: asyncio.Future[None]) -> None:
    """Cancel an unfinished warm-up (start-up failed) and wait for it."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _warm_start(core: _Core, memory: _Memory) -> None:
    """Tag what is not tagged yet (background; this process's shards' spaces only). The word
    pool is persisted: nothing to do."""
    owned = core.runtime().shards.owns_space
    core.tasks.spawn(memory.tagger.backfill(owned=owned), name="tag-backfill")
    core.tasks.spawn(memory.recall_index.backfill(), name="recall-index-backfill")
    core.tasks.spawn(memory.recall_embed.backfill(), name="recall-embed-backfill")


def _open_live_log(stack: AsyncExitStack, core: _Core) -> LiveLog:
    """The application log as a live feed (secrets masked), attached while services are open."""
    runtime, gateway = core.runtime, core.gateway
    live_log = LiveLog(lambda: [*runtime().secret_values(), *gateway.connection_keys()])
    root = logging.getLogger()
    root.addHandler(live_log)
    stack.callback(root.removeHandler, live_log)
    return live_log


@asynccontextmanager
async def open_services(
    settings: Settings,
    options: ServiceOptions | None = None,
    *,
    analyzer: JapaneseAnalyzer | None = None,
) -> AsyncIterator[Services]:
    """Open the database and everything built on it; close all of it on exit. `analyzer`:
    one the caller already spawned and closes (see `bot.ops.startup`)."""
    opts = options or ServiceOptions()
    async with AsyncExitStack() as stack:
        core = await _open_core(stack, settings, opts)
        tool_deps = _open_builtin_tools(stack, core, opts)
        memory = _open_memory(stack, core, tool_deps, analyzer)
        _follow_erasures(core, memory, tool_deps)
        # Loads off the event loop (threads) while the rest opens; done before we are ready.
        warming = asyncio.ensure_future(_warm_up(core, memory, opts))
        stack.push_async_callback(_settle, warming)
        topics = await _open_topics(core, memory)
        await memory.knowledge.relocate_files(settings.local_space_id)
        _register_memory_tools(core, memory)
        mcp = await _start_mcp(stack, core, opts)
        budget = TurnBudget(core.repos.token_usage, core.runtime, clock=opts.budget_clock)
        context, summarizer, engine = _build_engine(core, memory, budget)
        _add_engine_hooks(engine, memory, summarizer, topics, core.repos)
        # Closed first: background work (summaries, tags) still needs the gateway and tools.
        stack.push_async_callback(core.tasks.close)
        if opts.warm_start:
            await _warm_start(core, memory)
        await warming
        repos = core.repos
        yield Services(
            settings=core.runtime,
            db=core.db,
            repos=repos,
            tasks=core.tasks,
            gateway=core.gateway,
            registry=core.registry,
            context=context,
            summarizer=summarizer,
            engine=engine,
            analyzer=memory.analyzer,
            word_pool=memory.word_pool,
            tagger=memory.tagger,
            local_kb=memory.local_kb,
            topics=topics,
            notes=memory.notes,
            knowledge=memory.knowledge,
            spaces=memory.spaces,
            members=memory.members,
            tool_deps=tool_deps,
            mcp=mcp,
            transfer=SessionTransfer(
                core.db, repos.sessions, repos.messages, repos.memories, repos.attachments
            ),
            conversations=ConversationSessions(repos.sessions, repos.messages, repos.topics),
            attachment_intake=AttachmentIntake(repos.attachments, core.runtime),
            readiness=_open_readiness(core, mcp),
            live_log=_open_live_log(stack, core),
        )
