"""Property-based run of schemathesis over /api/openapi.json against the live server."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import hypothesis
import hypothesis.errors
import pytest
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance

from admin_api.state import SERVICES
from tests.admin_api.conftest import TOKEN, Admin
from tests.conftest import LOCAL
from tests.fakes.llm_server import Text

EXAMPLES = {GenerationMode.POSITIVE: 8, GenerationMode.NEGATIVE: 4}
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# Streams that never end by themselves (tested on their own): a fuzzed call would only time out.
ENDLESS = frozenset({"GET /api/logs/live", "GET /api/status/stream"})
# On PostgreSQL the download is a designed 503 naming pg_dump (test_backup.py checks it).
NO_FILE_BACKUP = frozenset({"GET /api/backup"})


def fuzz(
    spec: dict[str, Any], base_url: str, skip: frozenset[str] = ENDLESS
) -> tuple[Counter[int], list[str]]:
    """Run every operation but `skip` in both modes; returns (response statuses, failure
    descriptions)."""
    schema = schemathesis.openapi.from_dict(spec)
    checks = [not_a_server_error, response_schema_conformance]
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.label in skip:
            continue
        for mode, examples in EXAMPLES.items():

            @hypothesis.settings(
                max_examples=examples,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
                suppress_health_check=list(hypothesis.HealthCheck),
            )
            @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
            def run(case: schemathesis.Case) -> None:
                response = case.call(base_url=base_url, headers=AUTH, timeout=30)
                statuses[response.status_code] += 1
                case.validate_response(response, checks=checks)

            try:
                run()
            except hypothesis.errors.Unsatisfiable:
                continue  # nothing to negate (no parameters, no body)
            except (Exception, BaseExceptionGroup) as exc:
                failures.append(f"{operation.label} [{mode}]: {exc}"[:2000])
    return statuses, failures


async def test_schemathesis_finds_no_server_error_and_no_schema_break(admin: Admin) -> None:
    admin.llm.default_reply = Text("Fine.")
    session = await admin.services.repos.sessions.create(LOCAL, title="seed")
    await admin.services.repos.messages.add(LOCAL, session.id, "user", "hello")
    await admin.post("/api/notes", {"title": "Seed page", "content": "x"})
    await admin.post("/api/models/presets", {"label": "Seed", "value": "ollama/seed"})
    spec = (await admin.get("/api/openapi.json")).json
    assert spec["openapi"].startswith("3.1")

    skip = ENDLESS | (NO_FILE_BACKUP if admin.services.db.dialect == "postgresql" else set())
    statuses, failures = await asyncio.to_thread(fuzz, spec, admin.url, skip)
    await admin.services.tasks.drain()

    assert not failures, "\n\n".join(failures)
    assert sum(statuses.values()) >= 300, statuses
    assert sum(n for status, n in statuses.items() if status < 300) >= 100, statuses


async def test_schemathesis_run_does_catch_a_server_error(
    admin: Admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken() -> None:
        raise RuntimeError("stats are broken")

    monkeypatch.setattr(admin.server.runner.app[SERVICES].repos.stats, "collect", broken)
    spec = (await admin.get("/api/openapi.json")).json
    spec["paths"] = {"/api/system/stats": spec["paths"]["/api/system/stats"]}
    statuses, failures = await asyncio.to_thread(fuzz, spec, admin.url)
    assert statuses[500] >= 1
    assert failures and all("Server error" in failure for failure in failures)
