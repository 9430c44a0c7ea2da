"""The scheduler's status line reads as a sentence: "1 job" / "2 jobs", a readable UTC time."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from bot.ops.probes import scheduler_probe

NEXT = datetime(2026, 3, 1, 18, 30, tzinfo=timezone(timedelta(hours=9)))  # 09:30 UTC


@dataclass
class Job:
    next_run_time: datetime | None


@dataclass
class Inner:
    jobs: list[Job] = field(default_factory=list)
    running: bool = True

    def get_jobs(self) -> list[Job]:
        return self.jobs


@dataclass
class Scheduler:
    scheduler: Inner


async def detail(jobs: list[Job]) -> Any:
    return await scheduler_probe(Scheduler(Inner(jobs)))()  # type: ignore[arg-type]


async def test_one_job_is_singular_and_the_time_is_readable() -> None:
    check = await detail([Job(NEXT)])
    assert check.detail == "The topic scheduler runs 1 job; the next at 2026-03-01 09:30 UTC."
    assert check.facts["next_run"] == NEXT.isoformat(), "the API's fact stays machine-readable"


async def test_two_jobs_are_plural() -> None:
    check = await detail([Job(NEXT + timedelta(hours=1)), Job(NEXT.astimezone(UTC))])
    assert check.detail == "The topic scheduler runs 2 jobs; the next at 2026-03-01 09:30 UTC."
