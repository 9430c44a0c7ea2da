"""The probes readiness runs: the model and embedding model, the database, MCP, the scheduler.

Model probes speak HTTP to the configured server directly (Ollama `/api/tags` and `/api/show`,
an OpenAI-compatible server's `/models`), so a check costs no model call and no token.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import aiohttp

from bot.config import Settings, is_ollama_model, strip_ollama_prefix
from bot.llm.gateway import Endpoint, backend_address
from bot.ops.readiness import PROBE_TIMEOUT, Check, Fact, Part, Probe, Readiness, State

if TYPE_CHECKING:
    from bot.llm.gateway import LLMGateway
    from bot.store.engine.database import Database
    from bot.store.repos.model_presets import ModelPreset
    from bot.tools.mcp.status import McpTools
    from bot.topics.scheduler import TopicScheduler

log = logging.getLogger(__name__)

OLLAMA_DEFAULT_BASE = "http://localhost:11434"
Kind = Literal["ollama", "openai", "hosted"]
# Settings whose change means the model or the embedding model must be checked again.
MODEL_KEYS = frozenset({"llm_model", "llm_api_base", "llm_api_key", "embed_model"})


@dataclass(frozen=True)
class ModelTarget:
    """Where a model is served and under which name the server knows it."""

    kind: Kind
    base: str
    name: str
    configured: str
    key: str
    setting: str  # the variable that names the model: LLM_MODEL or EMBED_MODEL
    base_setting: str = "LLM_API_BASE"  # where the owner changes the address
    key_setting: str = "LLM_API_KEY"  # where the owner changes the key


def chat_target(settings: Settings, endpoint: Endpoint | None = None) -> ModelTarget:
    """The chat model (LLM_MODEL) and its server: where its calls go, at its connection's own
    address and key when it has them (`endpoint`), else LLM_API_BASE and LLM_API_KEY."""
    model = settings.llm_model
    backend, base, key = backend_address(settings, model, endpoint=endpoint)
    own = endpoint is not None and endpoint.api_base is not None
    where = "the connection's address" if own else "LLM_API_BASE"
    own_key = own or (endpoint is not None and endpoint.api_key is not None)
    which_key = "the connection's key" if own_key else "LLM_API_KEY"
    if backend == "ollama":
        base = base or OLLAMA_DEFAULT_BASE
        name = strip_ollama_prefix(model)
        return ModelTarget("ollama", base, name, model, key, "LLM_MODEL", where, which_key)
    kind: Kind = "openai" if base else "hosted"
    return ModelTarget(kind, base, _provider_name(model), model, key, "LLM_MODEL", where, which_key)


def embed_target(settings: Settings, model: str) -> ModelTarget:
    """The embedding model `model` and its server (the chat server when of the same kind)."""
    chat = chat_target(settings)
    if is_ollama_model(model):
        base = chat.base if chat.kind == "ollama" else OLLAMA_DEFAULT_BASE
        key = chat.key if chat.kind == "ollama" else ""
        return ModelTarget("ollama", base, strip_ollama_prefix(model), model, key, "EMBED_MODEL")
    if chat.kind == "openai":
        name = _provider_name(model)
        return ModelTarget("openai", chat.base, name, model, chat.key, "EMBED_MODEL")
    return ModelTarget("hosted", "", _provider_name(model), model, "", "EMBED_MODEL")


def connection_target(settings: Settings, preset: ModelPreset) -> ModelTarget:
    """A model connection (preset) and its server, where the gateway sends its calls: its own
    address (and only its own key there), else LLM_API_BASE with its key or LLM_API_KEY."""
    own = preset.api_base is not None
    where = "the connection's address" if own else "LLM_API_BASE"
    which_key = "the connection's key" if own or preset.api_key is not None else "LLM_API_KEY"
    backend, base, key = backend_address(
        settings, preset.value, endpoint=Endpoint(preset.api_base, preset.api_key)
    )
    kind: Kind
    if backend == "ollama":
        kind, base, name = "ollama", base or OLLAMA_DEFAULT_BASE, strip_ollama_prefix(preset.value)
    else:
        kind, name = ("openai" if base else "hosted"), _provider_name(preset.value)
    return ModelTarget(
        kind, base, name, preset.value, key, "the connection's model", where, which_key
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _provider_name(model: str) -> str:
    """`openai/gpt-4o-mini` as the server knows it: `gpt-4o-mini`."""
    return model.split("/", 1)[1] if "/" in model else model


def _reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words ("connection refused")."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        code = exc.os_error.errno
        if code == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(exc, aiohttp.ClientConnectorDNSError) or code is None:
            return "the host name was not found" if code is None else os.strerror(code).lower()
        return os.strerror(code).lower()
    return type(exc).__name__


def _refused(target: ModelTarget, status: int) -> Check:
    what = "rejected the API key" if target.key else "requires an API key"
    return Check(
        "down",
        f"The model server at {target.base} {what} (HTTP {status}); set {target.key_setting}.",
        error=f"HTTP {status}",
    )


FailureKind = Literal["unreachable", "auth", "not_found", "timeout"]


def failure_kind(check: Check) -> FailureKind | None:
    """What kind of failure a model check found (None: no failure it can name)."""
    if check.state != "down":
        return None
    if check.error == "timed out":
        return "timeout"
    if check.facts.get("reachable") is False:
        return "unreachable"
    if check.error in ("HTTP 401", "HTTP 403"):
        return "auth"
    if check.error is not None and check.error.endswith(" not found"):
        return "not_found"
    return None


class _Unreachable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ModelProbe:
    """Checks a model on its server: reachable, the model present, tool support."""

    def __init__(self, timeout: float = PROBE_TIMEOUT) -> None:
        self.timeout = timeout

    async def check(self, target: ModelTarget, *, implicit: bool = False) -> Check:
        """The state of `target`; `implicit` (a default nobody chose) is "disabled" if missing."""
        if target.kind == "hosted":
            return Check(
                "unknown",
                f"{target.configured} is a hosted provider's model, which PlayChat does not "
                f"probe; the first answer shows whether {target.setting} and {target.key_setting} "
                "work.",
            )
        headers = {"Authorization": f"Bearer {target.key}"} if target.key else {}
        try:
            async with (
                asyncio.timeout(self.timeout),
                aiohttp.ClientSession(headers=headers, trust_env=False) as http,
            ):
                if target.kind == "ollama":
                    return await self._ollama(http, target, implicit=implicit)
                return await self._openai(http, target)
        except TimeoutError:
            return Check(
                "down",
                f"The model server at {target.base} did not answer within {self.timeout:g} s; "
                f"check that it runs there, or set {target.base_setting}.",
                error="timed out",
                facts={"reachable": False},
            )
        except _Unreachable as exc:
            fix = "start Ollama" if target.kind == "ollama" else "start it"
            return Check(
                "down",
                f"The model server at {target.base} is not reachable ({exc.reason}); "
                f"{fix} or set {target.base_setting}.",
                error=exc.reason,
                facts={"reachable": False},
            )

    @staticmethod
    async def _get(
        http: aiohttp.ClientSession, method: str, url: str, body: Any = None
    ) -> tuple[int, Any]:
        try:
            async with http.request(method, url, json=body) as response:
                try:
                    data = await response.json(content_type=None)
                except ValueError:
                    data = None
                return response.status, data
        except aiohttp.ClientConnectionError as exc:
            raise _Unreachable(_reason(exc)) from exc

    async def _ollama(
        self, http: aiohttp.ClientSession, target: ModelTarget, *, implicit: bool
    ) -> Check:
        base = target.base.rstrip("/")
        status, data = await self._get(http, "GET", f"{base}/api/tags")
        if status in (401, 403):
            return _refused(target, status)
        models = data.get("models") if isinstance(data, dict) else None
        if status != 200 or not isinstance(models, list):
            return Check(
                "down",
                f"The server at {target.base} does not answer like Ollama (HTTP {status} on "
                f"/api/tags); set {target.base_setting} to the Ollama server's address.",
                error=f"HTTP {status} on /api/tags",
            )
        names = {str(m.get("model") or m.get("name")) for m in models if isinstance(m, dict)}
        name = target.name
        if name not in names and f"{name}:latest" not in names:
            if implicit:
                return Check(
                    "disabled",
                    f"No embedding model: {name} (the default) is not on the Ollama server at "
                    f"{target.base}, so the local knowledge base ranks by keywords; run "
                    f"`ollama pull {name}` or set EMBED_MODEL to use embeddings.",
                )
            return Check(
                "down",
                f"Model {name} is not on the Ollama server at {target.base}; run "
                f"`ollama pull {name}` or set {target.setting}.",
                error=f"{name} not found",
                facts={"models": len(names)},
            )
        if target.setting != "LLM_MODEL":
            detail = f"Model {name} is on the Ollama server at {target.base}."
            return Check("ok", detail, facts={"tools": None})
        return await self._ollama_tools(http, target, len(names))

    async def _ollama_tools(
        self, http: aiohttp.ClientSession, target: ModelTarget, count: int
    ) -> Check:
        base, name = target.base.rstrip("/"), target.name
        status, data = await self._get(http, "POST", f"{base}/api/show", {"model": name})
        capabilities = data.get("capabilities") if isinstance(data, dict) else None
        if status == 200 and isinstance(capabilities, list) and "tools" not in capabilities:
            return Check(
                "degraded",
                f"Model {name} on the Ollama server at {target.base} does not support tool calls, "
                "so web search, notes and the other tools cannot be used; choose a model with "
                "tool support in LLM_MODEL.",
                error="no tools capability",
                facts={"models": count, "tools": False},
            )
        tools = True if isinstance(capabilities, list) else None
        return Check(
            "ok",
            f"Model {name} is on the Ollama server at {target.base}.",
            facts={"models": count, "tools": tools},
        )

    async def _openai(self, http: aiohttp.ClientSession, target: ModelTarget) -> Check:
        base = target.base.rstrip("/")
        status, data = await self._get(http, "GET", f"{base}/models")
        if status in (401, 403):
            return _refused(target, status)
        listed = data.get("data") if isinstance(data, dict) else None
        if status != 200 or not isinstance(listed, list):
            return Check(
                "unknown",
                f"The model server at {target.base} answers but does not list its models "
                f"(HTTP {status} on /models); the first answer shows whether "
                f"{target.setting} works.",
            )
        ids = [str(m.get("id")) for m in listed if isinstance(m, dict)]
        if ids and target.name not in ids:
            shown = ", ".join(ids[:5])
            return Check(
                "down",
                f"Model {target.name} is not offered by the server at {target.base}; set "
                f"{target.setting} to one it lists ({shown}).",
                error=f"{target.name} not found",
                facts={"models": len(ids)},
            )
        return Check(
            "ok",
            f"Model {target.name} is offered by the server at {target.base}.",
            facts={"models": len(ids), "tools": None},
        )


def database_probe(db: Database) -> Probe:
    """A cheap query on the database."""

    async def probe() -> Check:
        try:
            await db.scalar("SELECT 1")
        except Exception as exc:
            return Check(
                "down",
                f"The database at {db.location} does not answer ({exc}); check the disk and "
                "the file's permissions (or the PostgreSQL server), then restart PlayChat.",
                error=str(exc)[:300],
            )
        return Check("ok", f"The database at {db.location} answers.")

    return probe


_MCP_STATES: dict[str, State] = {
    "connected": "ok",
    "connecting": "unknown",
    "down": "down",
    "disabled": "disabled",
}


def mcp_probe(settings: Callable[[], Settings], mcp: McpTools) -> Probe:
    """What the MCP manager knows of each configured server."""

    async def probe() -> Check:
        if settings().mcp_config is None:
            return Check("disabled", "No MCP servers are configured (MCP_CONFIG is not set).")
        if mcp.config_error:
            return Check(
                "down",
                f"MCP is off: {mcp.config_error}; fix the file MCP_CONFIG names.",
                error=mcp.config_error,
            )
        servers = mcp.status()
        parts = tuple(
            Part(
                s.name,
                _MCP_STATES.get(s.state, "unknown"),
                f"{s.transport} {s.target}: {s.state}, {len(s.tools)} tools",
                s.error,
            )
            for s in servers
        )
        live = sum(part.state == "ok" for part in parts)
        broken = [part for part in parts if part.state == "down"]
        detail = f"{live} of {len(parts)} MCP servers connected."
        if broken:
            names = ", ".join(f"{p.name} ({p.last_error or 'down'})" for p in broken)
            detail += f" Down: {names}; check the server and MCP_CONFIG."
        state: State = "ok"
        if broken:
            state = "down" if not live else "degraded"
        elif not parts:
            state = "disabled"
        error = broken[0].last_error if broken else None
        return Check(state, detail, error=error, parts=parts, facts={"servers": len(parts)})

    return probe


def scheduler_probe(scheduler: TopicScheduler) -> Probe:
    """Whether the topic scheduler runs, its job count and its next run."""

    async def probe() -> Check:
        inner = scheduler.scheduler
        if not inner.running:
            return Check(
                "down",
                "The topic scheduler is not running, so idle chats and scheduled topics do not "
                "post; restart PlayChat (the log says why it stopped).",
                error="not running",
            )
        jobs = inner.get_jobs()
        times: list[datetime] = [j.next_run_time for j in jobs if j.next_run_time is not None]
        upcoming = min(times) if times else None
        detail = (
            f"The topic scheduler runs {_count(len(jobs), 'job')}; the next at "
            f"{upcoming.astimezone(UTC):%Y-%m-%d %H:%M} UTC."
            if upcoming is not None
            else "The topic scheduler runs; no topic job is due (no channel has topics on)."
        )
        return Check(
            "ok",
            detail,
            facts={
                "jobs": len(jobs),
                "next_run": upcoming.isoformat() if upcoming is not None else None,
            },
        )

    return probe


@dataclass(frozen=True)
class ShardLink:
    """One Discord shard's gateway connection as the client sees it."""

    id: int
    connected: bool
    latency: float | None = None


def _ms(latency: float | None) -> int | None:
    # discord.py reports nan (or inf) before the first heartbeat is acknowledged.
    if latency is None or not math.isfinite(latency):
        return None
    return round(latency * 1000)


def _shard_part(link: ShardLink) -> Part:
    if not link.connected:
        return Part(f"Shard {link.id}", "down", "not connected (reconnecting)", "disconnected")
    ms = _ms(link.latency)
    shown = f", latency {ms} ms" if ms is not None else ""
    return Part(f"Shard {link.id}", "ok", f"connected{shown}")


def discord_check(
    *,
    connected: bool,
    ever: bool,
    servers: int,
    latency: float | None,
    shards: Sequence[ShardLink] = (),
) -> Check:
    """The Discord connection as the client sees it (fed from bot/bot.py); with `shards`, one
    part per shard, and "degraded" while some of them are down."""
    parts = tuple(_shard_part(link) for link in shards)
    up = sum(link.connected for link in shards)
    facts: dict[str, Fact] = {"servers": servers, "latency_ms": _ms(latency) if connected else None}
    if shards:
        facts["shards_connected"] = f"{up} of {len(shards)}"
    if connected:
        ms = facts["latency_ms"]
        shown = f"; gateway latency {ms} ms" if ms is not None else ""
        return Check(
            "ok", f"Connected to Discord, in {servers} servers{shown}.", facts=facts, parts=parts
        )
    if not ever:
        return Check("unknown", "Connecting to Discord…", parts=parts)
    if up:
        down = ", ".join(str(link.id) for link in shards if not link.connected)
        return Check(
            "degraded",
            f"{up} of {len(shards)} Discord shards are connected; shard(s) {down} are not "
            "(reconnecting), so their servers get no answers meanwhile.",
            error=f"shard(s) {down} disconnected",
            facts=facts,
            parts=parts,
        )
    return Check(
        "down",
        "The bot is not connected to Discord (the client is reconnecting); check this "
        "machine's network and https://discordstatus.com.",
        error="disconnected",
        facts=facts,
        parts=parts,
    )


class ModelProbes:
    """The model and embedding probes over the settings in effect."""

    def __init__(
        self, settings: Callable[[], Settings], gateway: LLMGateway, timeout: float
    ) -> None:
        self._settings = settings
        self._gateway = gateway
        self.probe = ModelProbe(timeout)

    async def _chat(self, settings: Settings) -> ModelTarget:
        """LLM_MODEL where the gateway sends it (its connection's address, if it has one)."""
        return chat_target(settings, await self._gateway.endpoint_for(settings.llm_model))

    async def model(self) -> Check:
        """LLM_MODEL on the server its calls go to."""
        return await self.probe.check(await self._chat(self._settings()))

    async def embeddings(self) -> Check:
        """EMBED_MODEL (or Ollama's default) on its server; disabled when there is none."""
        settings = self._settings()
        model = self._gateway.embed_model()
        if model is None:
            return Check(
                "disabled",
                "No embedding model (EMBED_MODEL is not set); the local knowledge base ranks "
                "by keywords.",
            )
        target = embed_target(settings, model)
        found = await self.probe.check(target, implicit=not settings.embed_model)
        chat_base = (await self._chat(settings)).base
        if found.facts.get("reachable") is False and target.base == chat_base:
            # The model's own check already says so; one warning per cause is enough.
            return Check(
                "unknown",
                f"The embedding model {target.name} is on the model server at {target.base}, "
                "which is not reachable (see the model).",
                error=found.error,
            )
        return found


Presets = Callable[[], Awaitable[list["ModelPreset"]]]


Used = Callable[[], Awaitable[set[str]]]


def _connections_check(
    parts: tuple[Part, ...],
    targets: list[ModelTarget],
    found: list[Check],
    chat_base: str,
    unused: frozenset[int] = frozenset(),
) -> Check:
    every_down = [part for part in parts if part.state == "down"]
    detail = f"{len(parts) - len(every_down)} of {len(parts)} model connections answer."
    # A dead connection nobody uses (not LLM_MODEL, no server's default) degrades nothing:
    # its card on the Connections screen says so.
    idle = [part for n, part in enumerate(parts) if part.state == "down" and n in unused]
    down = [part for part in every_down if part not in idle]
    if down:
        detail += " Down: " + ", ".join(p.name for p in down) + "."
    if idle:
        detail += " Not answering, used by nobody: " + ", ".join(p.name for p in idle) + "."
    state: State = "ok"
    if down:
        state = "down" if len(down) == len(parts) else "degraded"
    # Connections on the model's own unreachable server: the model's warning already says so.
    own_cause = all(
        target.base == chat_base and result.facts.get("reachable") is False
        for target, result in zip(targets, found, strict=True)
        if result.state == "down"
    )
    if down and own_cause:
        state = "unknown"
        detail += " They are on the model server, which is not reachable (see the model)."
    error = down[0].last_error if down else None
    return Check(state, detail, error=error, parts=parts, facts={"connections": len(parts)})


def connections_probe(
    settings: Callable[[], Settings], presets: Presets, probe: ModelProbe, used: Used | None = None
) -> Probe:
    """Every model connection (preset) on its server: one part each, reachable or not and why;
    `used`: the model strings in use (a dead connection outside them only warns on its card)."""

    async def check() -> Check:
        listed = await presets()
        if not listed:
            return Check(
                "disabled",
                "No model connections besides the model in .env; add one on the Connections "
                "screen to offer another model.",
            )
        current = settings()
        targets = [connection_target(current, preset) for preset in listed]
        found = await asyncio.gather(*(probe.check(target) for target in targets))
        parts = tuple(
            Part(preset.label, result.state, f"{preset.value}: {result.detail}", result.error)
            for preset, result in zip(listed, found, strict=True)
        )
        in_use = await used() if used is not None else {preset.value for preset in listed}
        unused = frozenset(n for n, preset in enumerate(listed) if preset.value not in in_use)
        return _connections_check(parts, targets, found, chat_target(current).base, unused)

    return check


def build_readiness(
    settings: Callable[[], Settings],
    db: Database,
    gateway: LLMGateway,
    mcp: McpTools,
    *,
    presets: Presets | None = None,
    used: Used | None = None,
    timeout: float = PROBE_TIMEOUT,
) -> Readiness:
    """Readiness with the probes every process can run (Discord and the scheduler are added
    by `python -m bot`, which runs them)."""
    # The probes bound themselves; the margin lets them say why instead of a bare timeout.
    readiness = Readiness(timeout=timeout + 0.5)
    models = ModelProbes(settings, gateway, timeout)
    readiness.register("model", models.model)
    readiness.register("embeddings", models.embeddings)
    readiness.register("database", database_probe(db))
    readiness.register("mcp", mcp_probe(settings, mcp))
    if presets is not None:
        readiness.register("connections", connections_probe(settings, presets, models.probe, used))
    return readiness
