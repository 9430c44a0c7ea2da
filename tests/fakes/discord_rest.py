"""REST half of the loopback Discord: users, channels, messages, threads and the "CDN".

Every message the bot creates, edits or deletes is echoed on the gateway as Discord does.
Validation follows Discord (2,000 characters, no empty messages, embed limits, thread rules)
with Discord's error codes, so the client raises what it would against discord.com.
"""

from __future__ import annotations

import logging
from typing import Any

from aiohttp import web

from tests.fakes.discord_gateway import Gateway
from tests.fakes.discord_http import (
    API,
    DiscordError,
    body_of,
    files_of,
    form_error,
    json_response,
    snowflake,
    unknown,
)
from tests.fakes.discord_models import (
    DIRECT_MESSAGES,
    GUILD_MESSAGES,
    GUILD_TEXT,
    GUILDS,
    JSON,
    PRIVATE_THREAD,
    REPLY,
    SENDABLE_FLAGS,
    SUPPRESS_EMBEDS,
    FakeAttachment,
    FakeChannel,
    FakeMessage,
    FakeUser,
    Notifier,
    UploadedFile,
    iso_now,
)
from tests.fakes.discord_state import DiscordState

log = logging.getLogger(__name__)


class RestApi:
    """Endpoints for users, the application, channels, messages, threads and attachments."""

    def __init__(
        self, state: DiscordState, gateway: Gateway, notifier: Notifier, *, upload_limit: int
    ) -> None:
        self.state = state
        self.gateway = gateway
        self.notifier = notifier
        self.upload_limit = upload_limit

    def add_routes(self, app: web.Application) -> None:
        """Register every endpoint on `app`."""
        r = app.router
        r.add_get(API + "/users/@me", self.get_me)
        r.add_get(API + "/oauth2/applications/@me", self.get_application)
        r.add_get(API + "/gateway", self.get_gateway)
        r.add_get(API + "/gateway/bot", self.get_gateway)
        r.add_post(API + "/users/@me/channels", self.create_dm)
        r.add_get(API + "/users/{uid}", self.get_user)
        r.add_get(API + "/channels/{cid}", self.get_channel)
        r.add_patch(API + "/channels/{cid}", self.edit_channel)
        r.add_post(API + "/channels/{cid}/typing", self.typing)
        r.add_get(API + "/channels/{cid}/messages", self.history)
        r.add_post(API + "/channels/{cid}/messages", self.create_message)
        r.add_get(API + "/channels/{cid}/messages/{mid}", self.get_message)
        r.add_patch(API + "/channels/{cid}/messages/{mid}", self.edit_message)
        r.add_delete(API + "/channels/{cid}/messages/{mid}", self.delete_message)
        r.add_post(API + "/channels/{cid}/messages/{mid}/threads", self.thread_from_message)
        r.add_post(API + "/channels/{cid}/threads", self.thread_without_message)
        r.add_put(API + "/channels/{cid}/thread-members/@me", self.no_content)
        reaction = API + "/channels/{cid}/messages/{mid}/reactions/{emoji}/@me"
        r.add_put(reaction, self.reaction)
        r.add_delete(reaction, self.reaction)
        r.add_get(API + "/guilds/{gid}/members/{uid}", self.get_member)
        r.add_get("/attachments/{cid}/{aid}/{filename}", self.get_attachment)

    # -- helpers

    def _channel(self, request: web.Request) -> FakeChannel:
        channel = self.state.channels.get(snowflake(request.match_info["cid"]))
        if channel is None:
            raise unknown("Channel", 10003)
        return channel

    def _message(self, channel: FakeChannel, raw_id: str) -> FakeMessage:
        message = self.state.messages.get(snowflake(raw_id))
        if message is None or message.deleted or message.channel_id != channel.id:
            raise unknown("Message", 10008)
        return message

    def echo(self, event: str, message: FakeMessage) -> None:
        """Send a message event on the gateway (not for ephemeral messages)."""
        self.gateway.dispatch_message(event, message)

    def _attachments(
        self, channel_id: int, body: JSON, files: list[UploadedFile]
    ) -> list[FakeAttachment]:
        described = {
            str(a.get("id")): a for a in body.get("attachments") or [] if isinstance(a, dict)
        }
        out = []
        for index, upload in enumerate(files):
            if len(upload.data) > self.upload_limit:
                raise DiscordError(413, 40005, "Request entity too large")
            key = (
                upload.field.removeprefix("files[").removesuffix("]")
                if upload.field
                else str(index)
            )
            meta = described.get(key, {})
            filename = meta.get("filename") or upload.filename or f"file{index}"
            att = self.state.add_attachment(channel_id, filename, upload.data, upload.content_type)
            att.description = meta.get("description")
            out.append(att)
        return out

    @staticmethod
    def _validate(message: FakeMessage, body: JSON) -> None:
        if len(message.content) > 2000:
            raise form_error("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.")
        if len(message.embeds) > 10:
            raise form_error("embeds", "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.")
        total = 0
        for embed in message.embeds:
            total += len(str(embed.get("title") or "")) + len(str(embed.get("description") or ""))
            if len(str(embed.get("description") or "")) > 4096:
                raise form_error(
                    "embeds", "BASE_TYPE_MAX_LENGTH", "Must be 4096 or fewer in length."
                )
        if total > 6000:
            raise form_error(
                "embeds", "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000"
            )
        empty = not (
            message.content.strip()
            or message.embeds
            or message.attachments
            or message.components
            or body.get("sticker_ids")
            or body.get("poll")
        )
        if empty:
            raise DiscordError(400, 50006, "Cannot send an empty message")

    def new_message(
        self,
        channel: FakeChannel,
        author: FakeUser,
        body: JSON,
        files: list[UploadedFile],
        **extra: Any,
    ) -> FakeMessage:
        """Validate and store a message from a create body (+ uploaded files)."""
        state = self.state
        message = FakeMessage(
            id=state.ids.next(),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            author=author,
            content=str(body.get("content") or ""),
            embeds=list(body.get("embeds") or ([body["embed"]] if body.get("embed") else [])),
            components=list(body.get("components") or []),
            flags=int(body.get("flags") or 0),
            allowed_mentions=body.get("allowed_mentions"),
            nonce=body.get("nonce"),
            **extra,
        )
        message.attachments = self._attachments(channel.id, body, files)
        message.component_versions.append(list(message.components))
        ref = body.get("message_reference")
        if isinstance(ref, dict) and ref.get("message_id") is not None:
            target = state.messages.get(snowflake(ref["message_id"]))
            if target is None or target.deleted:
                if ref.get("fail_if_not_exists", True):
                    raise form_error(
                        "message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message"
                    )
            else:
                message.type = REPLY
                message.referenced = target
                message.reference = {
                    "type": 0,
                    "message_id": str(target.id),
                    "channel_id": str(target.channel_id),
                    **({"guild_id": str(target.guild_id)} if target.guild_id is not None else {}),
                }
        self._validate(message, body)
        return state.add_message(message)

    def apply_edit(self, message: FakeMessage, body: JSON, files: list[UploadedFile]) -> None:
        """Apply an edit body to a message and validate the result."""
        if "content" in body:
            message.content = str(body["content"] or "")
        if "embeds" in body:
            message.embeds = list(body["embeds"] or [])
        if "components" in body:
            message.components = list(body["components"] or [])
            message.component_versions.append(list(message.components))
        if "allowed_mentions" in body:
            message.allowed_mentions = body["allowed_mentions"]
        if "flags" in body and body["flags"] is not None:
            keep = message.flags & ~SUPPRESS_EMBEDS
            message.flags = keep | (int(body["flags"]) & SUPPRESS_EMBEDS)
        if "attachments" in body or files:
            kept_ids = {
                str(a.get("id")) for a in body.get("attachments") or [] if isinstance(a, dict)
            }
            kept = [a for a in message.attachments if str(a.id) in kept_ids]
            if "attachments" not in body:
                kept = message.attachments
            message.attachments = kept + self._attachments(message.channel_id, body, files)
        self._validate(message, body)
        message.edited_timestamp = iso_now()
        message.versions.append(message.content)

    def _unarchive(self, channel: FakeChannel) -> None:
        if not channel.is_thread or not channel.archived:
            return
        if channel.locked:
            raise DiscordError(400, 50083, "Thread is archived")
        channel.archived = False
        self.gateway.dispatch("THREAD_UPDATE", self.state.channel_json(channel), intent=GUILDS)

    # -- users, application, gateway

    async def get_me(self, request: web.Request) -> web.StreamResponse:
        """GET /users/@me."""
        user = self.state.bot_user.to_json()
        return json_response({**user, "verified": True, "mfa_enabled": False, "flags": 0})

    async def get_application(self, request: web.Request) -> web.StreamResponse:
        """GET /oauth2/applications/@me."""
        state = self.state
        return json_response(
            {
                "id": str(state.application_id),
                "name": state.bot_user.username,
                "icon": None,
                "description": "",
                "summary": "",
                "rpc_origins": [],
                "bot_public": True,
                "bot_require_code_grant": False,
                "bot": state.bot_user.to_json(),
                "owner": state.admin_user.to_json(),
                "team": None,
                "verify_key": "0" * 64,
                "flags": 0,
                "interactions_endpoint_url": None,
                "redirect_uris": [],
                "tags": [],
                "approximate_guild_count": 1,
            }
        )

    async def get_gateway(self, request: web.Request) -> web.StreamResponse:
        """GET /gateway and /gateway/bot."""
        limit = {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1}
        url = f"{self.gateway.base_ws_url}/gateway"
        body = {"url": url, "shards": self.gateway.shard_count, "session_start_limit": limit}
        return json_response(body)

    async def get_user(self, request: web.Request) -> web.StreamResponse:
        """GET /users/{id}."""
        user = self.state.find_user(snowflake(request.match_info["uid"]))
        if user is None:
            raise unknown("User", 10013)
        return json_response(user.to_json())

    async def create_dm(self, request: web.Request) -> web.StreamResponse:
        """POST /users/@me/channels: open a DM with a known user."""
        body = body_of(request)
        user = self.state.find_user(snowflake(body.get("recipient_id")))
        if user is None:
            raise unknown("User", 10013)
        return json_response(self.state.channel_json(self.state.dm_channel(user)))

    # -- channels and messages

    async def get_channel(self, request: web.Request) -> web.StreamResponse:
        """GET /channels/{id}."""
        return json_response(self.state.channel_json(self._channel(request)))

    async def edit_channel(self, request: web.Request) -> web.StreamResponse:
        """PATCH /channels/{id}: name, archived, locked, auto_archive_duration."""
        channel = self._channel(request)
        body = body_of(request)
        if "name" in body:
            name = str(body["name"] or "")
            if not 1 <= len(name) <= 100:
                raise form_error(
                    "name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                )
            channel.name = name
        channel.archived = bool(body.get("archived", channel.archived))
        channel.locked = bool(body.get("locked", channel.locked))
        channel.auto_archive_duration = int(
            body.get("auto_archive_duration", channel.auto_archive_duration)
        )
        data = self.state.channel_json(channel)
        event = "THREAD_UPDATE" if channel.is_thread else "CHANNEL_UPDATE"
        self.gateway.dispatch(event, data, intent=GUILDS)
        return json_response(data)

    async def typing(self, request: web.Request) -> web.StreamResponse:
        """POST /channels/{id}/typing."""
        self._channel(request)
        return web.Response(status=204)

    async def no_content(self, request: web.Request) -> web.StreamResponse:
        """Endpoints that only need to succeed (joining a thread)."""
        self._channel(request)
        return web.Response(status=204)

    async def reaction(self, request: web.Request) -> web.StreamResponse:
        """PUT/DELETE the bot's own reaction (recorded in `calls`; no gateway event)."""
        self._message(self._channel(request), request.match_info["mid"])
        return web.Response(status=204)

    async def get_member(self, request: web.Request) -> web.StreamResponse:
        """GET /guilds/{gid}/members/{uid}."""
        uid = snowflake(request.match_info["uid"])
        guild = self.state.guilds.get(snowflake(request.match_info["gid"]))
        if guild is None or not guild.joined:
            raise unknown("Guild", 10004)
        if uid not in guild.members:
            raise unknown("Member", 10007)
        return json_response(self.state.member_json(uid, guild_id=guild.id))

    async def history(self, request: web.Request) -> web.StreamResponse:
        """GET /channels/{id}/messages: newest first, with limit/before/after/around."""
        channel = self._channel(request)
        q = request.query
        limit = max(1, min(100, snowflake(q.get("limit", "50"))))
        messages = self.state.visible_messages(channel.id)
        if "before" in q:
            messages = [m for m in messages if m.id < snowflake(q["before"])]
        if "after" in q:
            messages = [m for m in messages if m.id > snowflake(q["after"])]
            messages = messages[:limit]
        if "around" in q:
            pivot = snowflake(q["around"])
            older = [m for m in messages if m.id <= pivot][-(limit - limit // 2) :]
            messages = older + [m for m in messages if m.id > pivot][: limit // 2]
        page = list(reversed(messages))[:limit]
        return json_response([self.state.message_json(m) for m in page])

    async def get_message(self, request: web.Request) -> web.StreamResponse:
        """GET /channels/{id}/messages/{mid}."""
        channel = self._channel(request)
        message = self._message(channel, request.match_info["mid"])
        return json_response(self.state.message_json(message))

    async def create_message(self, request: web.Request) -> web.StreamResponse:
        """POST /channels/{id}/messages: store, echo as MESSAGE_CREATE, answer the message."""
        channel = self._channel(request)
        body = body_of(request)
        self._unarchive(channel)
        body = {**body, "flags": int(body.get("flags") or 0) & SENDABLE_FLAGS}
        message = self.new_message(channel, self.state.bot_user, body, files_of(request))
        self.echo("MESSAGE_CREATE", message)
        return json_response(self.state.message_json(message))

    async def edit_message(self, request: web.Request) -> web.StreamResponse:
        """PATCH /channels/{id}/messages/{mid}: only the bot's own content; echo MESSAGE_UPDATE."""
        channel = self._channel(request)
        message = self._message(channel, request.match_info["mid"])
        body = body_of(request)
        if message.author.id != self.state.bot_user.id and set(body) - {"flags"}:
            raise DiscordError(403, 50005, "Cannot edit a message authored by another user")
        self.apply_edit(message, body, files_of(request))
        self.echo("MESSAGE_UPDATE", message)
        return json_response(self.state.message_json(message))

    async def delete_message(self, request: web.Request) -> web.StreamResponse:
        """DELETE /channels/{id}/messages/{mid}."""
        channel = self._channel(request)
        message = self._message(channel, request.match_info["mid"])
        self.delete(message)
        return web.Response(status=204)

    def delete(self, message: FakeMessage) -> None:
        """Mark deleted and send MESSAGE_DELETE."""
        message.deleted = True
        if message.ephemeral:
            self.notifier.changed()
            return
        data: JSON = {"id": str(message.id), "channel_id": str(message.channel_id)}
        if message.guild_id is not None:
            data["guild_id"] = str(message.guild_id)
        intent = GUILD_MESSAGES if message.guild_id is not None else DIRECT_MESSAGES
        self.gateway.dispatch("MESSAGE_DELETE", data, intent=intent)

    # -- threads

    def _new_thread(
        self, parent: FakeChannel, thread_id: int, body: JSON, kind: int
    ) -> web.Response:
        if parent.type != GUILD_TEXT:
            raise DiscordError(400, 50024, "Cannot execute action on this channel type")
        name = str(body.get("name") or "")
        if not 1 <= len(name) <= 100:
            raise form_error("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
        thread = FakeChannel(
            id=thread_id,
            type=kind,
            name=name,
            guild_id=parent.guild_id,
            parent_id=parent.id,
            owner_id=self.state.bot_user.id,
            auto_archive_duration=int(body.get("auto_archive_duration") or 1440),
        )
        self.state.channels[thread.id] = thread
        data = self.state.channel_json(thread)
        member = {
            "id": str(thread.id),
            "user_id": str(self.state.bot_user.id),
            "join_timestamp": iso_now(),
            "flags": 1,
        }
        self.gateway.dispatch(
            "THREAD_CREATE", {**data, "newly_created": True, "member": member}, intent=GUILDS
        )
        return json_response(data, status=201)

    async def thread_from_message(self, request: web.Request) -> web.StreamResponse:
        """POST /channels/{id}/messages/{mid}/threads: the thread's id is the message's id."""
        channel = self._channel(request)
        message = self._message(channel, request.match_info["mid"])
        if message.thread_id is not None:
            raise DiscordError(400, 160004, "A thread has already been created for this message")
        response = self._new_thread(channel, message.id, body_of(request), kind=11)
        message.thread_id = message.id
        return response

    async def thread_without_message(self, request: web.Request) -> web.StreamResponse:
        """POST /channels/{id}/threads (private unless type 11 is asked for, as Discord)."""
        channel = self._channel(request)
        body = body_of(request)
        kind = int(body.get("type") or PRIVATE_THREAD)
        if kind not in (11, 12):
            raise form_error("type", "BASE_TYPE_CHOICES", "Value must be one of {11, 12}.")
        return self._new_thread(channel, self.state.ids.next(), body, kind)

    async def get_attachment(self, request: web.Request) -> web.StreamResponse:
        """GET /attachments/{channel}/{id}/{filename}: the registered bytes (the "CDN")."""
        attachment = self.state.attachments.get(snowflake(request.match_info["aid"]))
        if attachment is None:
            return web.Response(status=404, text="Not Found")
        ctype = attachment.content_type or "application/octet-stream"
        return web.Response(body=attachment.data, headers={"Content-Type": ctype})
