"""Interactions half of the loopback Discord: application commands, interaction callbacks
(once, within the deadline) and the interaction webhooks (original response, followups).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

from tests.fakes.discord_http import (
    API,
    CALL_KEY,
    DiscordError,
    body_of,
    files_of,
    form_error,
    json_response,
    snowflake,
    unknown,
)
from tests.fakes.discord_models import (
    CHAT_INPUT_COMMAND,
    EPHEMERAL,
    JSON,
    LOADING,
    SENDABLE_FLAGS,
    FakeAttachment,
    FakeChannel,
    FakeInteraction,
    FakeMessage,
    FakeUser,
    UploadedFile,
)
from tests.fakes.discord_rest import RestApi
from tests.fakes.discord_state import DiscordState

log = logging.getLogger(__name__)

_COMMAND_NAME = re.compile(r"^[-_\w]{1,32}$")
OptionValue = Any

# Application command option types.
SUB_COMMAND, SUB_COMMAND_GROUP = 1, 2
STRING, INTEGER, BOOLEAN, USER, CHANNEL, ROLE, MENTIONABLE, NUMBER, ATTACHMENT = range(3, 12)
# Interaction callback types allowed per interaction type (2 = command, 3 = message
# component, 4 = autocomplete). 6 and 7 answer a component on the message it is on.
_CALLBACKS = {2: {4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}}
DEFERRED_UPDATE, UPDATE_MESSAGE = 6, 7


class InteractionApi:
    """Endpoints for commands, interaction callbacks and interaction webhooks."""

    def __init__(self, rest: RestApi, *, ack_deadline: float) -> None:
        self.rest = rest
        self.state = rest.state
        self.ack_deadline = ack_deadline

    def add_routes(self, app: web.Application) -> None:
        """Register the endpoints on `app`."""
        r = app.router
        for path in ("/applications/{app}/commands", "/applications/{app}/guilds/{gid}/commands"):
            r.add_get(API + path, self.get_commands)
            r.add_put(API + path, self.put_commands)
        r.add_post(API + "/interactions/{iid}/{token}/callback", self.interaction_callback)
        r.add_post(API + "/webhooks/{app}/{token}", self.followup)
        r.add_get(API + "/webhooks/{app}/{token}/messages/{mid}", self.get_webhook_message)
        r.add_patch(API + "/webhooks/{app}/{token}/messages/{mid}", self.edit_webhook_message)
        r.add_delete(API + "/webhooks/{app}/{token}/messages/{mid}", self.delete_webhook_message)

    # -- application commands

    def _command_pool(self, request: web.Request) -> list[JSON]:
        if snowflake(request.match_info["app"]) != self.state.application_id:
            raise DiscordError(403, 50001, "Missing Access")
        gid = request.match_info.get("gid")
        if gid is None:
            return self.state.global_commands
        guild = self.state.guilds.get(snowflake(gid))
        if guild is None or not guild.joined:
            raise DiscordError(403, 50001, "Missing Access")
        return self.state.guild_commands.setdefault(guild.id, [])

    async def get_commands(self, request: web.Request) -> web.StreamResponse:
        """GET the registered global or guild commands."""
        return json_response(self._command_pool(request))

    async def put_commands(self, request: web.Request) -> web.StreamResponse:
        """PUT (bulk overwrite) commands; ids survive for the same (name, type)."""
        pool = self._command_pool(request)
        body = request[CALL_KEY].json
        if not isinstance(body, list):
            raise DiscordError(400, 50035, "Invalid Form Body")
        old = {(c["name"], c.get("type", 1)): c["id"] for c in pool}
        seen: set[tuple[str, int]] = set()
        stored: list[JSON] = []
        gid = request.match_info.get("gid")
        for index, cmd in enumerate(body):
            if not isinstance(cmd, dict):
                raise DiscordError(400, 50035, "Invalid Form Body")
            key = (str(cmd.get("name")), int(cmd.get("type", 1)))
            if not _COMMAND_NAME.match(key[0]) or (key[1] == 1 and key[0] != key[0].lower()):
                raise form_error(
                    f"{index}.name", "APPLICATION_COMMAND_INVALID_NAME", "Invalid name"
                )
            if key[1] == 1 and not 1 <= len(str(cmd.get("description") or "")) <= 100:
                raise form_error(
                    f"{index}.description",
                    "BASE_TYPE_BAD_LENGTH",
                    "Must be between 1 and 100 in length.",
                )
            if key in seen:
                raise form_error(
                    f"{index}.name", "APPLICATION_COMMANDS_DUPLICATE_NAME", "Duplicate name"
                )
            seen.add(key)
            entry = {
                **cmd,
                "id": old.get(key) or str(self.state.ids.next()),
                "application_id": str(self.state.application_id),
                "version": str(self.state.ids.next()),
                "type": key[1],
                "options": cmd.get("options") or [],
            }
            if gid is not None:
                entry["guild_id"] = gid
            stored.append(entry)
        pool[:] = stored
        return json_response(stored)

    # -- interactions

    def _interaction_by_token(self, request: web.Request) -> FakeInteraction:
        if snowflake(request.match_info["app"]) != self.state.application_id:
            raise unknown("Webhook", 10015)
        token = request.match_info["token"]
        for ix in self.state.interactions.values():
            if ix.token == token and ix.acknowledged:
                return ix
        raise unknown("Webhook", 10015)

    def _interaction_message(
        self, ix: FakeInteraction, body: JSON, files: list[UploadedFile], *, flags: int
    ) -> FakeMessage:
        channel = self.state.channels[ix.channel_id]
        message = self.rest.new_message(
            channel,
            self.state.bot_user,
            {**body, "flags": flags},
            files,
            webhook_id=self.state.application_id,
            interaction_id=ix.id,
        )
        if ix.custom_id is None:
            message.type = CHAT_INPUT_COMMAND
        return message

    async def interaction_callback(self, request: web.Request) -> web.StreamResponse:
        """POST /interactions/{id}/{token}/callback: once, within the deadline."""
        call = request[CALL_KEY]
        ix = self.state.interactions.get(snowflake(request.match_info["iid"]))
        if ix is None or ix.token != request.match_info["token"]:
            raise unknown("interaction", 10062)
        if ix.acknowledged:
            raise DiscordError(400, 40060, "Interaction has already been acknowledged.")
        if call.at - ix.created_at > self.ack_deadline:
            raise unknown("interaction", 10062)
        body = body_of(request)
        kind = body.get("type")
        if kind not in _CALLBACKS.get(ix.type, set()):
            raise form_error("type", "BASE_TYPE_CHOICES", f"Invalid callback type {kind!r}")
        data = body.get("data") or {}
        ix.callback_data = data
        message: FakeMessage | None = None
        if kind in (DEFERRED_UPDATE, UPDATE_MESSAGE):
            message = self._update_component_message(ix, data, call.files, edit=kind == 7)
        elif kind in (4, 5):
            flags = int(data.get("flags") or 0) & (EPHEMERAL | SENDABLE_FLAGS)
            if kind == 5:
                message = self._loading_message(ix, (flags & EPHEMERAL) | LOADING)
            else:
                message = self._interaction_message(ix, data, call.files, flags=flags)
            ix.original = message
            self.rest.echo("MESSAGE_CREATE", message)
        elif kind == 8:
            choices = data.get("choices")
            if not isinstance(choices, list) or len(choices) > 25:
                raise form_error(
                    "data.choices", "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length."
                )
            ix.choices = choices
        else:
            ix.modal = data
        ix.callback_type = int(kind)
        if request.query.get("with_response") not in ("1", "true", "True"):
            return web.Response(status=204)
        summary: JSON = {"id": str(ix.id), "type": ix.type}
        resource: JSON = {"type": kind}
        if message is not None:
            summary.update(
                response_message_id=str(message.id),
                response_message_loading=message.loading,
                response_message_ephemeral=message.ephemeral,
            )
            resource["message"] = self.state.message_json(message)
        return json_response({"interaction": summary, "resource": resource})

    def _update_component_message(
        self, ix: FakeInteraction, data: JSON, files: list[UploadedFile], *, edit: bool
    ) -> FakeMessage:
        """A component's message, edited by an UPDATE_MESSAGE callback (6 only acknowledges)."""
        message = self.state.messages[ix.message_id] if ix.message_id is not None else None
        if message is None or message.deleted:
            raise unknown("Message", 10008)
        ix.original = message
        if edit:
            self.rest.apply_edit(message, data, files)
            self.rest.echo("MESSAGE_UPDATE", message)
        return message

    def _loading_message(self, ix: FakeInteraction, flags: int) -> FakeMessage:
        channel = self.state.channels[ix.channel_id]
        message = FakeMessage(
            id=self.state.ids.next(),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            author=self.state.bot_user,
            content="",
            type=CHAT_INPUT_COMMAND,
            flags=flags,
            webhook_id=self.state.application_id,
            interaction_id=ix.id,
        )
        return self.state.add_message(message)

    def _webhook_message(self, ix: FakeInteraction, raw_id: str) -> FakeMessage:
        if raw_id == "@original":
            found = ix.original
        else:
            found = next((m for m in ix.messages() if str(m.id) == raw_id), None)
        if found is None or found.deleted:
            raise unknown("Message", 10008)
        return found

    async def followup(self, request: web.Request) -> web.StreamResponse:
        """POST /webhooks/{app}/{token}: the first followup after a defer fills the placeholder."""
        ix = self._interaction_by_token(request)
        body = body_of(request)
        files = files_of(request)
        original = ix.original
        if original is not None and original.loading and not original.deleted:
            original.flags &= ~LOADING
            self.rest.apply_edit(original, body, files)
            message = original
            self.rest.echo("MESSAGE_UPDATE", message)
        else:
            flags = int(body.get("flags") or 0) & (EPHEMERAL | SENDABLE_FLAGS)
            message = self._interaction_message(ix, body, files, flags=flags)
            ix.followups.append(message)
            self.rest.echo("MESSAGE_CREATE", message)
        if request.query.get("wait") in ("1", "true", "True"):
            return json_response(self.state.message_json(message))
        return web.Response(status=204)

    async def get_webhook_message(self, request: web.Request) -> web.StreamResponse:
        """GET /webhooks/{app}/{token}/messages/{mid|@original}."""
        ix = self._interaction_by_token(request)
        message = self._webhook_message(ix, request.match_info["mid"])
        return json_response(self.state.message_json(message))

    async def edit_webhook_message(self, request: web.Request) -> web.StreamResponse:
        """PATCH /webhooks/{app}/{token}/messages/{mid|@original} (ends a deferred "thinking")."""
        ix = self._interaction_by_token(request)
        message = self._webhook_message(ix, request.match_info["mid"])
        message.flags &= ~LOADING
        self.rest.apply_edit(message, body_of(request), files_of(request))
        self.rest.echo("MESSAGE_UPDATE", message)
        return json_response(self.state.message_json(message))

    async def delete_webhook_message(self, request: web.Request) -> web.StreamResponse:
        """DELETE /webhooks/{app}/{token}/messages/{mid|@original}."""
        ix = self._interaction_by_token(request)
        self.rest.delete(self._webhook_message(ix, request.match_info["mid"]))
        return web.Response(status=204)


class OptionBuilder:
    """Turns {name: value} into Discord option objects typed by the registered command."""

    def __init__(
        self, state: DiscordState, resolved: JSON, channel: FakeChannel, focused: str | None
    ) -> None:
        self.state = state
        self.resolved = resolved
        self.channel = channel
        self.focused = focused

    def build(
        self,
        command: JSON | None,
        subpath: list[str],
        options: Mapping[str, OptionValue] | Sequence[JSON],
    ) -> list[JSON]:
        """Nest subcommand groups/subcommands along `subpath`, then the leaf options."""
        if not isinstance(options, Mapping):
            if subpath:
                raise ValueError("raw option lists carry their own subcommands; pass the top name")
            return [dict(o) for o in options]
        schema: list[JSON] | None = command.get("options", []) if command else None
        top: list[JSON] = []
        container = top
        for part in subpath:
            node_type = SUB_COMMAND
            if schema is not None:
                node = next((o for o in schema if o["name"] == part), None)
                if node is None or node.get("type") not in (SUB_COMMAND, SUB_COMMAND_GROUP):
                    raise ValueError(f"no subcommand {part!r} in the registered command")
                node_type = node["type"]
                schema = node.get("options") or []
            entry: JSON = {"name": part, "type": node_type, "options": []}
            container.append(entry)
            container = entry["options"]
        container.extend(self._leaves(schema, options))
        return top

    def _leaves(self, schema: list[JSON] | None, values: Mapping[str, OptionValue]) -> list[JSON]:
        out = []
        by_name = {o["name"]: o for o in schema or []}
        for opt_name, value in values.items():
            if schema is not None and opt_name not in by_name:
                raise ValueError(f"option {opt_name!r} is not in the registered command")
            kind = int(by_name[opt_name]["type"]) if schema is not None else _infer_type(value)
            entry: JSON = {"name": opt_name, "type": kind}
            if opt_name == self.focused:
                entry.update(value=str(value), focused=True)
            else:
                entry["value"] = self._value(kind, value)
            out.append(entry)
        if schema is not None and self.focused is None:
            missing = [o["name"] for o in schema if o.get("required") and o["name"] not in values]
            if missing:
                raise ValueError(f"required options missing: {missing}")
        return out

    def _value(self, kind: int, value: OptionValue) -> Any:
        state, res = self.state, self.resolved
        if kind == STRING:
            return str(value)
        if kind == INTEGER:
            return int(value)
        if kind == NUMBER:
            return float(value)
        if kind == BOOLEAN:
            return bool(value)
        if kind == ATTACHMENT:
            att = (
                value
                if isinstance(value, FakeAttachment)
                else state.add_attachment(self.channel.id, *value)
            )
            res.setdefault("attachments", {})[str(att.id)] = att.to_json()
            return str(att.id)
        if kind == CHANNEL:
            ch = value if isinstance(value, FakeChannel) else state.channels[int(value)]
            entry = {
                **state.channel_json(ch),
                "permissions": str(state.permissions_of(state.bot_user.id, ch.guild_id)),
            }
            res.setdefault("channels", {})[str(ch.id)] = entry
            return str(ch.id)
        user = value if isinstance(value, FakeUser) else state.find_user(int(value))
        if kind in (USER, MENTIONABLE) and user is not None:
            res.setdefault("users", {})[str(user.id)] = user.to_json()
            gid = self.channel.guild_id
            if gid is not None and user.id in state.guild(gid).members:
                member = state.member_json(user.id, with_user=False, guild_id=gid)
                member["permissions"] = str(state.permissions_of(user.id, gid))
                res.setdefault("members", {})[str(user.id)] = member
            return str(user.id)
        roles = state.guild(self.channel.guild_id).roles
        if kind in (ROLE, MENTIONABLE) and int(value) in roles:
            res.setdefault("roles", {})[str(int(value))] = roles[int(value)].to_json()
            return str(int(value))
        raise ValueError(f"cannot make an option of type {kind} from {value!r}")


def _infer_type(value: OptionValue) -> int:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, float):
        return NUMBER
    if isinstance(value, FakeUser):
        return USER
    if isinstance(value, FakeChannel):
        return CHANNEL
    if isinstance(value, FakeAttachment | tuple):
        return ATTACHMENT
    return STRING
