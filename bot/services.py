"""Services: every long-lived resource, opened once by the composition root and passed in."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from bot.chat.context import ContextBuilder
from bot.chat.engine import ChatEngine, TurnResult
from bot.chat.summarize import Summarizer
from bot.config import Settings
from bot.llm.gateway import BackendFactory, LLMGateway, RetryPolicy, default_backend_factory
from bot.runtime_settings import RuntimeSettings
from bot.store.api_logs import ApiLogRepository
from bot.store.app_settings import AppSettingsRepository
from bot.store.attachments import AttachmentRepository
from bot.store.db import Database
from bot.store.memories import MemoryRepository
from bot.store.messages import MessageRepository
from bot.store.sessions import SessionRepository
from bot.tasks import BackgroundTasks
from bot.tools.registry import ToolRegistry

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
        )


@dataclass
class ServiceOptions:
    """Seams for tests and benchmarks; production uses the defaults."""

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    backend_factory: BackendFactory = default_backend_factory
    builtin_tools: bool = True


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
        context = ContextBuilder(repos.messages, repos.memories)
        summarizer = Summarizer(runtime, gateway, repos.messages, repos.memories)
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

        engine.add_turn_hook(summarize_after_turn)
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
        )
