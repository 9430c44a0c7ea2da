"""`GET /api/readiness` and `POST /api/readiness/check` (authenticated); `/health` unchanged."""

from __future__ import annotations

from tests.admin_api.conftest import Admin, StartAdmin, admin, start_admin
from tests.ops.conftest import closed_port

__all__ = ["admin", "start_admin"]  # the admin API fixtures, used here by name


async def test_health_stays_public_and_minimal_while_readiness_needs_auth(admin: Admin) -> None:
    health = await admin.get("/health", token=None)
    assert (health.status, health.json) == (200, {"status": "ok"})
    assert (await admin.get("/api/readiness", token=None)).status == 401
    assert (await admin.post("/api/readiness/check", token=None)).status in (401, 403)


async def test_readiness_reports_every_component_and_a_check_on_demand(admin: Admin) -> None:
    before = await admin.get("/api/readiness")
    assert before.status == 200
    names = [c["name"] for c in before.json["components"]]
    assert names == [
        "discord",
        "model",
        "connections",
        "embeddings",
        "database",
        "settings",
        "mcp",
        "scheduler",
    ]
    assert all(c["state"] == "unknown" for c in before.json["components"])
    checked = await admin.post("/api/readiness/check")
    assert checked.status == 200
    states = {c["name"]: c for c in checked.json["components"]}
    assert states["model"]["state"] == "ok"
    assert states["model"]["checked_at"] is not None
    assert states["database"]["state"] == "ok"
    # The admin API alone cannot see Discord or the scheduler.
    assert states["discord"]["state"] == states["scheduler"]["state"] == "unknown"
    assert checked.json["status"] == "ok"


async def test_readiness_says_why_the_model_is_down(start_admin: StartAdmin) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    admin = await start_admin(llm_api_base=base)
    reply = await admin.post("/api/readiness/check")
    model = next(c for c in reply.json["components"] if c["name"] == "model")
    assert model["state"] == "down"
    assert base in model["detail"] and "LLM_API_BASE" in model["detail"]
    assert model["last_error"] == "connection refused"
    assert reply.json["status"] == "down"
