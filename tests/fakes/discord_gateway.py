"""Gateway half of the loopback Discord: HELLO, IDENTIFY, heartbeats, dispatch, RESUME.

Every session keeps all its dispatches in order (sequence number = index + 1). One writer
task per socket sends what the session holds from the socket's position on, so live sends and
RESUME replays are the same code path and a client that resumes from its last sequence gets
every event exactly once.

Sharding as Discord does it: an IDENTIFY with `"shard": [k, n]` makes a session of shard k;
guild events go to the sessions of shard `(guild_id >> 22) % n`, DMs (and other events without
a guild) to shard 0; READY lists only that shard's guilds and GUILD_CREATE follows for those.
A RESUME carries no shard: the session, found by its id, keeps the one it identified with.
A session without `shard` gets every event (one unsharded connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.discord_models import (
    DIRECT_MESSAGES,
    GUILD_MEMBERS,
    GUILD_MESSAGES,
    JSON,
    MESSAGE_CONTENT,
    PRIVILEGED_INTENTS,
    FakeMessage,
    Notifier,
    ResumeRecord,
    shard_of,
)
from tests.fakes.discord_state import DiscordState

log = logging.getLogger(__name__)

DISPATCH, HEARTBEAT, IDENTIFY, PRESENCE, VOICE, RESUME, RECONNECT = 0, 1, 2, 3, 4, 6, 7
REQUEST_MEMBERS, INVALID_SESSION, HELLO, HEARTBEAT_ACK = 8, 9, 10, 11
# Events whose guild is in `id` rather than `guild_id`.
GUILD_ID_IN_ID = frozenset({"GUILD_CREATE", "GUILD_UPDATE", "GUILD_DELETE"})


def event_guild_id(event: str, data: JSON) -> int | None:
    """The guild an event belongs to (None: a DM or no guild), as Discord routes it."""
    raw = data.get("id") if event in GUILD_ID_IN_ID else data.get("guild_id")
    return None if raw is None else int(raw)


def parse_shard(value: Any) -> tuple[int, int] | None:
    """IDENTIFY's `shard` as (shard id, shard count); ValueError when malformed."""
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 0 <= value[0] < value[1]
    ):
        raise ValueError(f"invalid shard {value!r}")
    return value[0], value[1]


@dataclass
class GatewaySession:
    """One IDENTIFY: its intents and every dispatch sent to it, in sequence order."""

    session_id: str
    intents: int
    identify: JSON
    shard: tuple[int, int] | None = None
    frames: list[str] = field(default_factory=list)
    events: list[tuple[int, str, JSON]] = field(default_factory=list)
    connection: GatewayConnection | None = None

    def receives(self, guild_id: int | None) -> bool:
        """Whether Discord would send this session an event of `guild_id` (None: a DM)."""
        if self.shard is None:
            return True
        shard_id, count = self.shard
        return shard_id == (0 if guild_id is None else shard_of(guild_id, count))

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest dispatch (0 before any)."""
        return len(self.frames)

    def enqueue(self, event: str, data: JSON) -> int:
        """Append a dispatch and wake the attached socket, if any."""
        seq = len(self.frames) + 1
        self.frames.append(json.dumps({"op": DISPATCH, "t": event, "s": seq, "d": data}))
        self.events.append((seq, event, data))
        if self.connection is not None:
            self.connection.wake.set()
        return seq


class GatewayConnection:
    """One websocket: a control-frame queue plus a cursor into its session's dispatches."""

    def __init__(self, ws: web.WebSocketResponse, request: web.Request) -> None:
        self.ws = ws
        self.request = request
        self.path = request.path
        self.session: GatewaySession | None = None
        self.next_seq = 1
        self.control: deque[str] = deque()
        self.wake = asyncio.Event()

    def send_control(self, payload: JSON) -> None:
        """Queue a non-dispatch frame (HELLO, ACK, RECONNECT, INVALID_SESSION)."""
        self.control.append(json.dumps(payload))
        self.wake.set()

    async def run_writer(self) -> None:
        """Send control frames, then the attached session's dispatches from the cursor on."""
        try:
            while not self.ws.closed:
                await self.wake.wait()
                self.wake.clear()
                while self.control and not self.ws.closed:
                    await self.ws.send_str(self.control.popleft())
                session = self.session
                while (
                    session is not None
                    and session.connection is self
                    and self.next_seq <= session.last_seq
                    and not self.ws.closed
                ):
                    frame = session.frames[self.next_seq - 1]
                    self.next_seq += 1
                    await self.ws.send_str(frame)
        except ConnectionError:
            log.debug("gateway socket gone while writing")

    async def close(self, code: int, message: str) -> None:
        """Close the socket with a gateway close code."""
        await self.ws.close(code=code, message=message.encode())


class Gateway:
    """The websocket endpoint(s) and the dispatch fan-out to sessions."""

    def __init__(
        self,
        state: DiscordState,
        notifier: Notifier,
        *,
        token: str,
        heartbeat_interval_ms: int,
        privileged_intents: int,
        shard_count: int = 1,
    ) -> None:
        self.state = state
        self.shard_count = shard_count
        self.notifier = notifier
        self.token = token
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.privileged_intents = privileged_intents
        self.base_ws_url = ""
        self.sessions: list[GatewaySession] = []
        self.connections: list[GatewayConnection] = []
        self.resumes: list[ResumeRecord] = []
        self.presences: list[JSON] = []
        # While True, connection attempts are refused with HTTP 503 (an outage); each refused
        # attempt is counted.
        self.refusing = False
        self.refused = 0

    # -- fan-out

    def dispatch(
        self,
        event: str,
        data: JSON,
        *,
        intent: int = 0,
        redacted: JSON | None = None,
    ) -> None:
        """Send an event to every session of its guild's shard that has `intent` (0: all),
        redacted if needed."""
        guild_id = event_guild_id(event, data)
        for session in self.sessions:
            if intent and not session.intents & intent:
                continue
            if not session.receives(guild_id):
                continue
            payload = data
            if redacted is not None and not session.intents & MESSAGE_CONTENT:
                payload = redacted
            session.enqueue(event, payload)
        self.notifier.changed()

    def dispatch_message(self, event: str, message: FakeMessage) -> None:
        """MESSAGE_CREATE/UPDATE as Discord sends it (ephemeral messages are not sent)."""
        if message.ephemeral:
            return
        state = self.state
        intent = GUILD_MESSAGES if message.guild_id is not None else DIRECT_MESSAGES
        self.dispatch(
            event,
            state.message_json(message),
            intent=intent,
            redacted=state.redacted_message_json(message),
        )

    def attached(self) -> list[GatewayConnection]:
        """Sockets currently attached to a session."""
        return [c for c in self.connections if c.session is not None and c.session.connection is c]

    async def force_reconnect(self) -> int:
        """Send op 7 on every attached socket; dispatches wait for the RESUME. Returns count."""
        conns = self.attached()
        for conn in conns:
            assert conn.session is not None
            conn.session.connection = None
            conn.send_control({"op": RECONNECT, "d": None})
        self.notifier.changed()
        return len(conns)

    async def disconnect(self, code: int | None) -> int:
        """Drop every attached socket: abruptly (code None) or with a close frame."""
        conns = self.attached()
        for conn in conns:
            assert conn.session is not None
            conn.session.connection = None
            if code is None:
                transport = conn.request.transport
                if transport is not None:
                    transport.abort()
            else:
                await conn.close(code, "Disconnected by test.")
        self.notifier.changed()
        return len(conns)

    async def close_all(self) -> None:
        """Close every socket (server shutdown)."""
        for conn in list(self.connections):
            if not conn.ws.closed:
                with contextlib.suppress(ConnectionError):
                    await conn.close(1001, "Server shutting down.")

    # -- socket handling

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """aiohttp handler for /gateway and /resume-gateway."""
        if self.refusing:
            self.refused += 1
            self.notifier.changed()
            return web.Response(status=503, text="Service unavailable (test outage).")
        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        conn = GatewayConnection(ws, request)
        self.connections.append(conn)
        writer = asyncio.create_task(conn.run_writer())
        conn.send_control({"op": HELLO, "d": {"heartbeat_interval": self.heartbeat_interval_ms}})
        try:
            async for msg in ws:
                if msg.type is not WSMsgType.TEXT:
                    await conn.close(4002, "Decode error.")
                    break
                await self._on_frame(conn, msg.data)
        finally:
            if conn.session is not None and conn.session.connection is conn:
                conn.session.connection = None
            self.connections.remove(conn)
            conn.wake.set()
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            self.notifier.changed()
        return ws

    async def _on_frame(self, conn: GatewayConnection, raw: str) -> None:
        try:
            frame = json.loads(raw)
            op = frame["op"]
            data = frame.get("d")
        except (ValueError, KeyError, TypeError):
            await conn.close(4002, "Decode error.")
            return
        if op == HEARTBEAT:
            conn.send_control({"op": HEARTBEAT_ACK})
            return
        if op == IDENTIFY:
            await self._identify(conn, data)
        elif op == RESUME:
            await self._resume(conn, data)
        elif conn.session is None:
            await conn.close(4003, "Not authenticated.")
        elif op == REQUEST_MEMBERS:
            self._request_members(conn.session, data)
        elif op == PRESENCE:
            self.presences.append(data)
        elif op == VOICE:
            log.debug("ignoring voice state update %s", data)
        else:
            await conn.close(4001, "Unknown opcode.")
        self.notifier.changed()

    async def _identify(self, conn: GatewayConnection, data: Any) -> None:
        if conn.session is not None:
            await conn.close(4005, "Already authenticated.")
            return
        if not isinstance(data, dict) or data.get("token") != self.token:
            await conn.close(4004, "Authentication failed.")
            return
        intents = data.get("intents")
        if not isinstance(intents, int) or intents < 0:
            await conn.close(4013, "Invalid intent(s).")
            return
        if intents & PRIVILEGED_INTENTS & ~self.privileged_intents:
            await conn.close(4014, "Disallowed intent(s).")
            return
        try:
            shard = parse_shard(data.get("shard"))
        except ValueError:
            await conn.close(4010, "Invalid shard.")
            return
        session = GatewaySession(uuid.uuid4().hex, intents, data, shard)
        self.sessions.append(session)
        conn.session = session
        conn.next_seq = 1
        session.connection = conn
        state = self.state
        guilds = [g for g in state.guilds.values() if g.joined and session.receives(g.id)]
        ready: JSON = {
            "v": 10,
            "user": {**state.bot_user.to_json(), "verified": True, "mfa_enabled": False},
            "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": f"{self.base_ws_url}/resume-gateway",
            "application": {"id": str(state.application_id), "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "auth": {},
            "user_settings": {},
            "geo_ordered_rtc_regions": [],
            "guild_join_requests": [],
        }
        if shard is not None:
            ready["shard"] = list(shard)
        session.enqueue("READY", ready)
        for guild in guilds:
            session.enqueue("GUILD_CREATE", state.guild_create_json(guild.id))

    async def _resume(self, conn: GatewayConnection, data: Any) -> None:
        if not isinstance(data, dict) or data.get("token") != self.token:
            await conn.close(4004, "Authentication failed.")
            return
        session = next((s for s in self.sessions if s.session_id == data.get("session_id")), None)
        seq = data.get("seq")
        if session is None or not isinstance(seq, int) or not 0 <= seq <= session.last_seq:
            conn.send_control({"op": INVALID_SESSION, "d": False})
            return
        old = session.connection
        if old is not None and old is not conn:
            old.session = None
        session.connection = conn
        conn.session = session
        conn.next_seq = seq + 1
        self.resumes.append(
            ResumeRecord(session.session_id, seq, session.last_seq - seq, conn.path)
        )
        session.enqueue("RESUMED", {"_trace": ["fake-discord"]})

    def _request_members(self, session: GatewaySession, data: Any) -> None:
        state = self.state
        if not isinstance(data, dict):
            return
        guild = state.guild(int(data.get("guild_id", state.guild_id)))
        user_ids = {int(u) for u in data.get("user_ids") or []}
        query = str(data.get("query") or "").lower()
        limit = int(data.get("limit") or 0)
        keep: Callable[[int], bool] = (
            (lambda uid: uid in user_ids)
            if user_ids
            else (lambda uid: guild.members[uid].user.username.lower().startswith(query))
        )
        members = [state.member_json(uid, guild_id=guild.id) for uid in guild.members if keep(uid)]
        if limit:
            members = members[:limit]
        if not session.intents & GUILD_MEMBERS and not user_ids and not query:
            members = []
        chunk: JSON = {
            "guild_id": str(guild.id),
            "members": members,
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [],
        }
        if "nonce" in data:
            chunk["nonce"] = data["nonce"]
        session.enqueue("GUILD_MEMBERS_CHUNK", chunk)
