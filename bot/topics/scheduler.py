"""apscheduler jobs for every enabled channel of this process's shards, rebuilt on change."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.store.repos.topics import TopicChannel
from bot.store.shards import ShardFilter
from bot.store.spaces import ALL_SPACES
from bot.topics.service import PostResult, TopicService
from bot.utils.zones import zone

log = logging.getLogger(__name__)

# Missed runs (downtime, a blocked loop) collapse into one run; a run older than the grace
# time is skipped, so a restart never produces a burst of posts.
JOB_DEFAULTS: dict[str, Any] = {"coalesce": True, "max_instances": 1, "misfire_grace_time": 300}


def parse_cron(expression: str, timezone: str) -> CronTrigger:
    """A cron expression in a time zone; raises ValueError when either is invalid."""
    return CronTrigger.from_crontab(expression, timezone=zone(timezone))


def cron_trigger(channel: TopicChannel) -> CronTrigger:
    """The channel's cron expression in its time zone; raises ValueError when invalid."""
    assert channel.cron
    return parse_cron(channel.cron, channel.timezone)


def owns_channel(shards: ShardFilter, channel: TopicChannel) -> bool:
    """Whether this process posts in `channel`: its server is on one of our shards (a channel
    without a recorded server goes by its space)."""
    if channel.guild_id is not None:
        return shards.owns_guild(channel.guild_id)
    return shards.owns_space(channel.space_id)


class TopicScheduler:
    """Owns the AsyncIOScheduler and keeps one idle job (+ one cron job) per enabled channel
    whose server is on this process's shards (several processes may share one database: each
    channel is scheduled by exactly one of them)."""

    def __init__(
        self,
        service: TopicService,
        scheduler: AsyncIOScheduler | None = None,
        *,
        shards: ShardFilter | None = None,
    ) -> None:
        self._service = service
        self._scheduler = scheduler or AsyncIOScheduler(job_defaults=JOB_DEFAULTS, timezone="UTC")
        self._shards = shards or ShardFilter()

    @property
    def scheduler(self) -> AsyncIOScheduler:
        """The underlying scheduler (for inspection)."""
        return self._scheduler

    async def start(self) -> None:
        """Build the jobs from the database, start ticking, and rebuild on every change."""
        await self._service.load()
        await self.rebuild()
        self._service.add_change_listener(self.rebuild)
        if not self._scheduler.running:
            self._scheduler.start()
        self._service.register_schedule(self.next_runs)

    def next_runs(self) -> dict[str, datetime | None]:
        """When each job runs next, by job id (None: paused or not scheduled yet)."""
        return {job.id: getattr(job, "next_run_time", None) for job in self._scheduler.get_jobs()}

    async def rebuild(self) -> list[str]:
        """Replace every job with what the database says now; returns the job ids."""
        self._scheduler.remove_all_jobs()
        ids: list[str] = []
        for channel in await self._service.repo.channels(ALL_SPACES, enabled_only=True):
            if not owns_channel(self._shards, channel):
                continue
            job_id = f"idle:{channel.channel_id}"
            self._scheduler.add_job(
                self.check_idle,
                IntervalTrigger(minutes=max(1, channel.check_interval_minutes)),
                args=[channel.channel_id],
                id=job_id,
                replace_existing=True,
                **JOB_DEFAULTS,
            )
            ids.append(job_id)
            await self._arm_when_due(channel.channel_id)
            if channel.cron:
                try:
                    trigger = cron_trigger(channel)
                except ValueError as exc:
                    log.warning("bad schedule for channel %s: %s", channel.channel_id, exc)
                    continue
                job_id = f"cron:{channel.channel_id}"
                self._scheduler.add_job(
                    self._service.run_cron,
                    trigger,
                    args=[channel.channel_id],
                    id=job_id,
                    replace_existing=True,
                    **JOB_DEFAULTS,
                )
                ids.append(job_id)
        if self._shards.sharded:
            log.info("topic jobs (%s): %s", self._shards.describe(), ", ".join(ids) or "none")
        else:
            log.info("topic jobs: %s", ", ".join(ids) or "none")
        return ids

    async def check_idle(self, channel_id: int) -> PostResult:
        """The channel's idle check; then, when only the quiet wait holds the next opener back,
        the next check runs the moment it ends rather than at the next coarse tick."""
        result = await self._service.check_idle(channel_id)
        if result.due_at is not None:
            self._arm(f"idle:{channel_id}", result.due_at)
        elif result.posted:
            await self._arm_when_due(channel_id)
        return result

    async def _arm_when_due(self, channel_id: int) -> None:
        """Check the channel again when its quiet wait ends (if only that holds it back)."""
        _, decision = await self._service.status(channel_id)
        if decision.due_at is not None:
            self._arm(f"idle:{channel_id}", decision.due_at)

    def _arm(self, job_id: str, due: datetime) -> None:
        """Run `job_id` at `due` if that is before its next run, or its next run is past (the
        tick stays a fallback)."""
        job = self._scheduler.get_job(job_id)
        if job is None:
            return
        upcoming: datetime | None = getattr(job, "next_run_time", None)
        if upcoming is None or upcoming <= self._service.now() or due < upcoming:
            job.modify(next_run_time=due)

    def shutdown(self) -> None:
        """Stop the scheduler without waiting for running jobs."""
        self._service.remove_change_listener(self.rebuild)
        self._service.register_schedule(dict)
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
