"""The loopback Discord's world (guilds, their channels, members, messages, commands,
interactions) and its rendering as the JSON payloads Discord sends (checked against
discord.py 2.7.1's parsers).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from urllib.parse import quote

from tests.fakes.discord_models import (
    ADMINISTRATOR,
    ALL_PERMISSIONS,
    DM,
    EVERYONE_PERMISSIONS,
    GUILD_TEXT,
    JSON,
    MANAGE_MESSAGES,
    MANAGE_THREADS,
    ROLE_MENTION,
    FakeAttachment,
    FakeChannel,
    FakeGuild,
    FakeInteraction,
    FakeMember,
    FakeMessage,
    FakeRole,
    FakeUser,
    Snowflakes,
)


class DiscordState:
    """The fake's world: a first guild with two text channels, a normal user, an admin, the
    bot; more guilds (`add_guild`) each with their own roles, members and channels.

    `guild_id`, `roles`, `members`, `admin_role` and `bot_role` are the first guild's.
    """

    def __init__(self) -> None:
        self.ids = Snowflakes()
        self.base_url = ""
        bot_id = self.ids.next()
        self.application_id = bot_id
        self.bot_user = FakeUser(bot_id, "PlayChatBot", bot=True)
        self.guilds: dict[int, FakeGuild] = {}
        self.channels: dict[int, FakeChannel] = {}
        first = self.add_guild("PlayChat Test Guild")
        self.guild_id = first.id
        self.guild_name = first.name
        self.admin_role = first.admin_role
        self.bot_role = first.bot_role
        self.roles: dict[int, FakeRole] = first.roles
        self.members: dict[int, FakeMember] = first.members
        self.user = FakeUser(self.ids.next(), "alice")
        self.admin_user = FakeUser(self.ids.next(), "admin")
        self.add_member(self.user, [])
        self.add_member(self.admin_user, [self.admin_role.id])
        first.owner_id = self.admin_user.id
        self.channel_id = self.add_channel("general", position=0).id
        self.other_channel_id = self.add_channel("random", position=1).id
        self.messages: dict[int, FakeMessage] = {}
        self.channel_messages: dict[int, list[FakeMessage]] = {}
        self.attachments: dict[int, FakeAttachment] = {}
        self.global_commands: list[JSON] = []
        self.guild_commands: dict[int, list[JSON]] = {}
        self.interactions: dict[int, FakeInteraction] = {}

    @property
    def owner_id(self) -> int:
        """The first guild's owner."""
        return self.guilds[self.guild_id].owner_id

    def add_guild(self, name: str, *, shard: tuple[int, int] | None = None) -> FakeGuild:
        """A new guild the bot is in: @everyone, Admin and the bot's role; the bot a member.

        Its id has a millisecond of its own (guilds spread over shards); with `shard`
        (shard id, shard count) one whose events Discord would route to that shard.
        """
        guild_id = self.ids.next_spread() if shard is None else self.ids.next_on_shard(*shard)
        admin_role = FakeRole(self.ids.next(), "Admin", ADMINISTRATOR, position=2)
        bot_role = FakeRole(
            self.ids.next(),
            "PlayChatBot",
            EVERYONE_PERMISSIONS | MANAGE_MESSAGES | MANAGE_THREADS,
            position=1,
            managed=True,
        )
        everyone = FakeRole(guild_id, "@everyone", EVERYONE_PERMISSIONS)
        guild = FakeGuild(guild_id, name, admin_role, bot_role)
        guild.roles.update({r.id: r for r in (everyone, bot_role, admin_role)})
        self.guilds[guild_id] = guild
        self.add_member(self.bot_user, [bot_role.id], guild_id=guild_id)
        return guild

    def guild(self, guild_id: int | None = None) -> FakeGuild:
        """A guild by id (the first guild by default)."""
        return self.guilds[self.guild_id if guild_id is None else guild_id]

    # -- world building

    def add_member(
        self, user: FakeUser, role_ids: Iterable[int], *, guild_id: int | None = None
    ) -> FakeMember:
        """Make `user` a member of the guild (the first by default) with the given roles."""
        member = FakeMember(user, list(role_ids))
        self.guild(guild_id).members[user.id] = member
        return member

    def add_channel(
        self, name: str, *, position: int = 0, guild_id: int | None = None
    ) -> FakeChannel:
        """Add a text channel to the guild (the first by default)."""
        gid = self.guild(guild_id).id
        channel = FakeChannel(self.ids.next(), GUILD_TEXT, name, gid, position=position)
        self.channels[channel.id] = channel
        return channel

    def dm_channel(self, user: FakeUser) -> FakeChannel:
        """The DM channel between the bot and `user` (created on first use)."""
        for channel in self.channels.values():
            if channel.recipient is not None and channel.recipient.id == user.id:
                return channel
        channel = FakeChannel(self.ids.next(), DM, "", None, recipient=user)
        self.channels[channel.id] = channel
        return channel

    def find_user(self, user_id: int) -> FakeUser | None:
        """A known user by id (guild members and DM recipients)."""
        for guild in self.guilds.values():
            member = guild.members.get(user_id)
            if member is not None:
                return member.user
        for channel in self.channels.values():
            if channel.recipient is not None and channel.recipient.id == user_id:
                return channel.recipient
        return None

    def permissions_of(self, user_id: int, guild_id: int | None = None) -> int:
        """Guild permissions of a member (administrator means all, as Discord sends it)."""
        guild = self.guild(guild_id)
        member = guild.members.get(user_id)
        if member is None:
            return 0
        perms = guild.roles[guild.id].permissions
        for role_id in member.role_ids:
            perms |= guild.roles[role_id].permissions
        if perms & ADMINISTRATOR or user_id == guild.owner_id:
            return ALL_PERMISSIONS
        return perms

    def add_message(self, message: FakeMessage) -> FakeMessage:
        """Store a new message in its channel."""
        message.versions.append(message.content)
        self.messages[message.id] = message
        self.channel_messages.setdefault(message.channel_id, []).append(message)
        return message

    def add_attachment(
        self, channel_id: int, filename: str, data: bytes, content_type: str | None
    ) -> FakeAttachment:
        """Store a file and give it a URL served by the fake."""
        att_id = self.ids.next()
        url = f"{self.base_url}/attachments/{channel_id}/{att_id}/{quote(filename)}"
        attachment = FakeAttachment(att_id, filename, content_type, data, url)
        self.attachments[att_id] = attachment
        return attachment

    def visible_messages(self, channel_id: int) -> list[FakeMessage]:
        """Non-deleted, non-ephemeral messages of a channel, oldest first."""
        return [
            m
            for m in self.channel_messages.get(channel_id, [])
            if not m.deleted and not m.ephemeral
        ]

    def threads(self) -> list[FakeChannel]:
        """All threads, in creation order."""
        return [c for c in self.channels.values() if c.is_thread]

    # -- JSON

    def member_json(
        self, user_id: int, *, with_user: bool = True, guild_id: int | None = None
    ) -> JSON:
        """The guild member object."""
        member = self.guild(guild_id).members[user_id]
        out: JSON = {
            "nick": None,
            "avatar": None,
            "roles": [str(r) for r in member.role_ids],
            "joined_at": member.joined_at,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "communication_disabled_until": None,
        }
        if with_user:
            out["user"] = member.user.to_json()
        return out

    def channel_json(self, channel: FakeChannel) -> JSON:
        """The channel object (text channel, thread or DM)."""
        last = self.channel_messages.get(channel.id)
        out: JSON = {
            "id": str(channel.id),
            "type": channel.type,
            "last_message_id": str(last[-1].id) if last else None,
            "flags": 0,
        }
        if channel.type == DM:
            assert channel.recipient is not None
            out["recipients"] = [channel.recipient.to_json()]
            return out
        out.update(
            guild_id=str(channel.guild_id),
            name=channel.name,
            rate_limit_per_user=0,
            nsfw=False,
        )
        if channel.is_thread:
            count = len(self.channel_messages.get(channel.id, []))
            out.update(
                parent_id=str(channel.parent_id),
                owner_id=str(channel.owner_id),
                message_count=count,
                total_message_sent=count,
                member_count=1,
                applied_tags=[],
                thread_metadata={
                    "archived": channel.archived,
                    "locked": channel.locked,
                    "auto_archive_duration": channel.auto_archive_duration,
                    "archive_timestamp": channel.created_at,
                    "create_timestamp": channel.created_at,
                },
            )
        else:
            out.update(
                position=channel.position,
                permission_overwrites=[],
                parent_id=None,
                topic=None,
                default_auto_archive_duration=1440,
            )
        return out

    def guild_create_json(self, guild_id: int | None = None) -> JSON:
        """GUILD_CREATE for a guild (channels, active threads, roles, members)."""
        guild = self.guild(guild_id)
        gid = guild.id
        guild_channels = [c for c in self.channels.values() if c.guild_id == gid]
        return {
            "id": str(gid),
            "name": guild.name,
            "icon": None,
            "splash": None,
            "discovery_splash": None,
            "owner_id": str(guild.owner_id),
            "afk_channel_id": None,
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 1,
            "explicit_content_filter": 0,
            "roles": [r.to_json() for r in guild.roles.values()],
            "emojis": [],
            "stickers": [],
            "features": [],
            "mfa_level": 0,
            "system_channel_id": None,
            "system_channel_flags": 0,
            "rules_channel_id": None,
            "vanity_url_code": None,
            "description": None,
            "banner": None,
            "premium_tier": 0,
            "premium_subscription_count": 0,
            "preferred_locale": "en-US",
            "public_updates_channel_id": None,
            "nsfw_level": 0,
            "joined_at": guild.members[self.bot_user.id].joined_at,
            "large": False,
            "unavailable": False,
            "member_count": len(guild.members),
            "voice_states": [],
            "members": [self.member_json(uid, guild_id=gid) for uid in guild.members],
            "channels": [self.channel_json(c) for c in guild_channels if not c.is_thread],
            "threads": [
                self.channel_json(c) for c in guild_channels if c.is_thread and not c.archived
            ],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
        }

    def message_json(self, message: FakeMessage, *, with_reference: bool = True) -> JSON:
        """The message object as the gateway and REST send it."""
        mentions: list[JSON] = []
        for user_id in self.mentioned_ids(message):
            user = self.find_user(user_id)
            if user is None:
                continue
            entry = user.to_json()
            gid = message.guild_id
            if gid is not None and user_id in self.guild(gid).members:
                entry["member"] = self.member_json(user_id, with_user=False, guild_id=gid)
            mentions.append(entry)
        out: JSON = {
            "id": str(message.id),
            "type": message.type,
            "channel_id": str(message.channel_id),
            "author": message.author.to_json(),
            "content": message.content,
            "timestamp": message.timestamp,
            "edited_timestamp": message.edited_timestamp,
            "tts": False,
            "mention_everyone": False,
            "mentions": mentions,
            "mention_roles": [r for r in ROLE_MENTION.findall(message.content)],
            "attachments": [a.to_json() for a in message.attachments],
            "embeds": message.embeds,
            "components": message.components,
            "pinned": False,
            "flags": message.flags,
        }
        if message.guild_id is not None:
            out["guild_id"] = str(message.guild_id)
            members = self.guild(message.guild_id).members
            if message.author.id in members and message.webhook_id is None:
                out["member"] = self.member_json(
                    message.author.id, with_user=False, guild_id=message.guild_id
                )
        if message.nonce is not None:
            out["nonce"] = message.nonce
        if message.webhook_id is not None:
            out["webhook_id"] = str(message.webhook_id)
            out["application_id"] = str(self.application_id)
        if message.interaction_id is not None:
            out["interaction_metadata"] = self._interaction_metadata(message.interaction_id)
        if message.thread_id is not None and message.thread_id in self.channels:
            out["thread"] = self.channel_json(self.channels[message.thread_id])
        if message.reference is not None:
            out["message_reference"] = message.reference
            if with_reference:
                ref = message.referenced
                out["referenced_message"] = (
                    None
                    if ref is None or ref.deleted
                    else self.message_json(ref, with_reference=False)
                )
        return out

    def _interaction_metadata(self, interaction_id: int) -> JSON:
        """A response message's `interaction_metadata` (a component's names its message)."""
        ix = self.interactions[interaction_id]
        out: JSON = {
            "id": str(ix.id),
            "type": ix.type,
            "user": ix.user.to_json(),
            "authorizing_integration_owners": {"0": str(ix.guild_id or self.guild_id)},
            "name": ix.name,
            "command_type": 1,
        }
        if ix.message_id is not None:
            out["interacted_message_id"] = str(ix.message_id)
        return out

    def mentioned_ids(self, message: FakeMessage) -> list[int]:
        """Users in the message's `mentions`: written mentions, plus a pinged reply target."""
        ids = message.mentioned_user_ids()
        ref = message.referenced
        if ref is not None and ref.author.id in message.pings().users:
            ids.append(ref.author.id)
        return list(dict.fromkeys(ids))

    def redacted_message_json(self, message: FakeMessage) -> JSON | None:
        """The payload a session without MESSAGE_CONTENT gets, or None when it sees it all."""
        if message.guild_id is None or message.author.id == self.bot_user.id:
            return None
        if self.bot_user.id in self.mentioned_ids(message):
            return None
        out = self.message_json(message)
        out.update(content="", embeds=[], attachments=[], components=[])
        return out

    def find_command(self, name: str, guild_id: int | None) -> JSON | None:
        """A registered chat-input command by name (guild commands win, as in Discord)."""
        pools = [self.guild_commands.get(guild_id, [])] if guild_id is not None else []
        for cmd in itertools.chain(*pools, self.global_commands):
            if cmd["name"] == name and cmd.get("type", 1) == 1:
                return cmd
        return None
