"""Request and response bodies of the admin API (the OpenAPI document is built from these)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from apscheduler.triggers.cron import CronTrigger
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel, model_validator

from bot.memory.notes import MAX_CONTENT_CHARS, MAX_SECTION_CHARS, MAX_TITLE_CHARS
from bot.store.transfer import SQLITE_INT_MAX, TEXT_ID_PATTERN
from bot.topics.policy import parse_hhmm, zone

RowId = Annotated[int, Field(ge=1, le=SQLITE_INT_MAX)]
SessionId = Annotated[str, Field(pattern=TEXT_ID_PATTERN)]
Limit = Annotated[int, Field(ge=1, le=200)]
Title = Annotated[str, Field(min_length=1, max_length=200)]
NoteTitle = Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS)]
Section = Annotated[str, Field(max_length=MAX_SECTION_CHARS)]
NoteText = Annotated[str, Field(max_length=MAX_CONTENT_CHARS)]
ModelName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:/@+-]+$")]


class Body(BaseModel):
    """A request body: unknown fields are an error, so typos do not pass silently."""

    model_config = ConfigDict(extra="forbid")


def _utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # naive times are taken as UTC, like stored ones
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("time is out of range") from None


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]


def stored_time(value: datetime | None) -> str | None:
    """A validated (UTC) datetime as the ISO-8601 text in the database (comparable as text)."""
    if value is None:
        return None
    return value.isoformat(timespec="microseconds")


# ----------------------------------------------------------------------------- common


class ErrorOut(BaseModel):
    """Every error: a short machine-readable code and a human-readable detail."""

    error: str
    detail: str


class IdPath(BaseModel):
    """A numeric record id in the path."""

    id: RowId


class SessionPath(BaseModel):
    """A session id in the path."""

    session_id: SessionId


class DeletedOut(BaseModel):
    """How many records a delete removed."""

    deleted: int


class OkOut(BaseModel):
    """An action succeeded."""

    ok: bool = True


class HealthOut(BaseModel):
    """Liveness."""

    status: Literal["ok"] = "ok"


class OpenApiOut(BaseModel):
    """The OpenAPI 3.1 document of this API."""

    model_config = ConfigDict(extra="allow")

    openapi: str


# ----------------------------------------------------------------------------- auth


class LoginIn(Body):
    """Password login."""

    password: Annotated[str, Field(min_length=1, max_length=1024)]


class LoginOut(BaseModel):
    """A session cookie was set."""

    ok: bool = True
    expires_at: str


class WhoAmIOut(BaseModel):
    """How the caller authenticated."""

    method: Literal["token", "cookie"]


# ----------------------------------------------------------------------------- notes


class NoteOut(BaseModel):
    """A shared note page."""

    id: int
    title: str
    content: str
    position: int
    section: str
    created_at: str
    updated_at: str


class NoteListOut(BaseModel):
    """Every page in position order."""

    pages: list[NoteOut]


class NoteCreateIn(Body):
    """A new page."""

    title: NoteTitle
    content: NoteText = ""
    section: Section = ""


class NoteUpdateIn(Body):
    """Changes to a page; omitted fields stay as they are."""

    title: NoteTitle | None = None
    content: NoteText | None = None
    section: Section | None = None


class SectionRenameIn(Body):
    """Rename a section on every page in it."""

    old: Section
    new: Section


class RenamedOut(BaseModel):
    """How many pages were renamed."""

    renamed: int


class NoteReorderIn(Body):
    """The full new order of page ids after a drag and drop; `page_id` moves to `section`."""

    page_id: RowId
    section: Section
    order: Annotated[list[RowId], Field(max_length=10_000)]


class SessionNotesIn(Body):
    """The pages whose bodies go into a session's prompt."""

    page_ids: Annotated[list[RowId], Field(max_length=100)]


class SessionNotesOut(BaseModel):
    """A session's linked pages."""

    session_id: str
    page_ids: list[int]


# ----------------------------------------------------------------------------- settings


class SettingsOut(BaseModel):
    """Runtime-editable settings; secrets appear only as {set, last4}."""

    values: dict[str, Any]
    secret_keys: list[str]


class SettingsUpdateIn(Body):
    """New values by key; null resets a key; a secret sent back masked keeps the stored one."""

    values: dict[str, Any]


# ----------------------------------------------------------------------------- logs


class LogFilterQuery(BaseModel):
    """Which API log rows to list or delete."""

    session_id: Annotated[str, Field(max_length=200)] | None = None
    model: Annotated[str, Field(max_length=200)] | None = None
    errors_only: bool = False
    since: UtcDatetime | None = None
    until: UtcDatetime | None = None


class LogListQuery(LogFilterQuery):
    """A page of API logs: newest first; pass `next_cursor` back as `cursor`."""

    limit: Limit = 50
    cursor: RowId | None = None


class LogDeleteQuery(LogFilterQuery):
    """Delete matching rows; with no filter at all, `all=true` is required."""

    all: bool = False


class LogSummaryOut(BaseModel):
    """One LLM call, without its request and response bodies."""

    id: int
    session_id: str | None
    model: str
    purpose: str
    error: str | None
    latency_ms: int
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None
    created_at: str


class LogListOut(BaseModel):
    """A page of logs."""

    items: list[LogSummaryOut]
    next_cursor: int | None


class LogDetailOut(LogSummaryOut):
    """One LLM call with its (redacted) request and response."""

    request_json: str
    response_text: str | None


# ----------------------------------------------------------------------------- memory


class PageQuery(BaseModel):
    """Newest first; pass `next_cursor` back as `cursor`."""

    limit: Limit = 50
    cursor: RowId | None = None


class SummaryQuery(PageQuery):
    """Summaries of one session (all of them) or of every session (paged)."""

    session_id: SessionId | None = None


class SummaryOut(BaseModel):
    """A long-term memory summary."""

    id: int
    session_id: str
    summary: str
    level: int
    condensed_into: int | None
    created_at: str


class SummaryListOut(BaseModel):
    """A page of summaries."""

    items: list[SummaryOut]
    next_cursor: int | None


class SourceOut(BaseModel):
    """A knowledge source."""

    title: str
    url: str


class KnowledgeOut(BaseModel):
    """A saved piece of web knowledge."""

    id: int
    query: str
    title: str
    summary: str
    session_id: str | None
    md_path: str | None
    created_at: str
    sources: list[SourceOut]


class KnowledgeListOut(BaseModel):
    """A page of knowledge entries."""

    items: list[KnowledgeOut]
    next_cursor: int | None


# ----------------------------------------------------------------------------- models


class PresetOut(BaseModel):
    """A model preset."""

    id: int
    label: str
    value: str
    created_at: str


class PresetListOut(BaseModel):
    """Every preset."""

    presets: list[PresetOut]


class PresetIn(Body):
    """A new preset."""

    label: Title
    value: ModelName


class PresetUpdateIn(Body):
    """Changes to a preset."""

    label: Title | None = None
    value: ModelName | None = None


class AvailableModelsOut(BaseModel):
    """The configured model and the models the configured backend offers."""

    current: str
    models: list[str]


class ConnectionTestOut(BaseModel):
    """One short call to the configured model: whether it answered, how fast, and what."""

    ok: bool
    model: str
    latency_ms: int
    reply: str
    error: str | None


# ----------------------------------------------------------------------------- system


class BackfillIn(Body):
    """How many untagged rows to tag at most."""

    limit: Annotated[int, Field(ge=1, le=5000)] = 500


class BackfillOut(BaseModel):
    """How many rows were tagged."""

    tagged: int


class WordPoolOut(BaseModel):
    """The word pool, oldest first."""

    words: list[str]


class StatsOut(BaseModel):
    """Counts and totals."""

    sessions: int
    open_sessions: int
    messages: int
    archived_messages: int
    memories: int
    knowledge_entries: int
    note_pages: int
    attachments: int
    attachment_bytes: int
    api_calls: int
    api_errors: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    db_bytes: int


# ----------------------------------------------------------------------------- sessions


class SessionListQuery(BaseModel):
    """Most recently active first; pass `next_cursor` back as `before`."""

    limit: Limit = 50
    before: Annotated[str, Field(max_length=64)] | None = None


class SessionOut(BaseModel):
    """A conversation."""

    id: str
    title: str
    model: str | None
    source: str
    discord_channel_id: int | None
    discord_guild_id: int | None
    topic: str | None
    closed_at: str | None
    created_at: str
    updated_at: str


class SessionListOut(BaseModel):
    """A page of sessions."""

    items: list[SessionOut]
    next_cursor: str | None


class MessageOut(BaseModel):
    """A message; archived ones carry archived_at and the summary (memory) that replaced them."""

    id: int
    role: str
    content: str
    author_id: str | None
    author_name: str | None
    discord_message_id: int | None
    reply_to: int | None
    archived_at: str | None
    memory_id: int | None
    created_at: str


class MessageListOut(BaseModel):
    """Every message of a session, archived ones included, in conversation order."""

    session_id: str
    messages: list[MessageOut]


class ImportQuery(BaseModel):
    """`as_new=true` imports a copy under a fresh id instead of refusing an existing id."""

    as_new: bool = False


class ImportOut(BaseModel):
    """The imported session's id."""

    session_id: str


# ----------------------------------------------------------------------------- chat


class ChatIn(Body):
    """A message to answer; the answer streams back as server-sent events."""

    message: Annotated[str, Field(min_length=1, max_length=32_000)]
    session_id: SessionId | None = None
    model: ModelName | None = None
    note_page_ids: Annotated[list[RowId], Field(max_length=100)] | None = None


# ----------------------------------------------------------------------------- topics


def _hhmm(value: str) -> str:
    try:
        parse_hhmm(value)
    except ValueError:
        raise ValueError("must be a time HH:MM") from None
    return value


def _time_zone(value: str) -> str:
    zone(value)
    return value


def _crontab(value: str | None) -> str | None:
    if value is not None:
        try:
            CronTrigger.from_crontab(value)
        except ValueError:
            raise ValueError("must be a 5-field crontab expression") from None
    return value


HHMM = Annotated[str, Field(pattern=r"^\d{1,2}:\d{2}$"), AfterValidator(_hhmm)]
TimeZone = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_time_zone)]
Crontab = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(_crontab)]
NOT_NULL_TOPIC_FIELDS = (
    "enabled",
    "idle_minutes",
    "check_interval_minutes",
    "active_start",
    "active_end",
    "timezone",
    "max_posts_per_day",
    "persona",
)


class ChannelPath(BaseModel):
    """A Discord channel id in the path."""

    channel_id: Annotated[int, Field(ge=1, le=SQLITE_INT_MAX)]


class TopicChannelOut(BaseModel):
    """How and when the bot may start conversations in one channel."""

    channel_id: int
    guild_id: int | None
    enabled: bool
    idle_minutes: int
    check_interval_minutes: int
    active_start: str
    active_end: str
    timezone: str
    max_posts_per_day: int
    cron: str | None
    language: str | None
    persona: str
    last_human_at: str | None
    updated_at: str


class TopicPostOut(BaseModel):
    """An opener the bot posted."""

    id: int
    channel_id: int
    kind: str
    topic: str
    words: list[str]
    content: str
    discord_message_id: int | None
    posted_at: str


class TopicListOut(BaseModel):
    """Every configured channel."""

    channels: list[TopicChannelOut]


class TopicStatusOut(BaseModel):
    """A channel's schedule, what an idle check would decide now, and its latest posts."""

    channel: TopicChannelOut
    would_post: bool
    reason: str
    recent_posts: list[TopicPostOut]


class TopicUpdateIn(Body):
    """Changes to a channel's schedule; omitted fields stay as they are (null clears cron,
    language and guild_id)."""

    guild_id: Annotated[int, Field(ge=0, le=SQLITE_INT_MAX)] | None = None
    enabled: bool | None = None
    idle_minutes: Annotated[int, Field(ge=1, le=7 * 24 * 60)] | None = None
    check_interval_minutes: Annotated[int, Field(ge=1, le=24 * 60)] | None = None
    active_start: HHMM | None = None
    active_end: HHMM | None = None
    timezone: TimeZone | None = None
    max_posts_per_day: Annotated[int, Field(ge=0, le=100)] | None = None
    cron: Crontab | None = None
    language: Literal["ja", "en"] | None = None
    persona: Annotated[str, Field(max_length=2000)] | None = None

    @model_validator(mode="after")
    def _no_null_for_required(self) -> TopicUpdateIn:
        nulls = [
            name
            for name in NOT_NULL_TOPIC_FIELDS
            if name in self.model_fields_set and getattr(self, name) is None
        ]
        if nulls:
            raise ValueError(f"cannot be null: {', '.join(nulls)}")
        return self

    def changes(self) -> dict[str, object]:
        """Only the fields the client sent."""
        return self.model_dump(exclude_unset=True)


class TopicRunOut(BaseModel):
    """What a run-now did."""

    posted: bool
    reason: str
    text: str
    topic: str
    message_id: int | None


class SessionIdEvent(BaseModel):
    """The session of the turn (first event)."""

    type: Literal["session_id"]
    value: str


class ToolEventValue(BaseModel):
    """A tool call starting (running: label, detail) or finishing (done/error: result)."""

    id: str
    name: str
    status: Literal["running", "done", "error"]
    label: str | None = None
    detail: str | None = None
    result: str | None = None


class ToolEventOut(BaseModel):
    """Tool progress; the same id starts and finishes."""

    type: Literal["tool"]
    value: ToolEventValue


class NotesUpdatedEventOut(BaseModel):
    """The AI changed a shared note."""

    type: Literal["notes_updated"]


class SourcesEventOut(BaseModel):
    """Web sources used so far."""

    type: Literal["sources"]
    value: list[SourceOut]


class ChunkEventOut(BaseModel):
    """A piece of the answer."""

    type: Literal["chunk"]
    value: str


class DoneEventOut(BaseModel):
    """The turn finished; the answer is stored as message `message_id`."""

    type: Literal["done"]
    message_id: int


class ErrorEventOut(BaseModel):
    """The turn failed; `value` is safe to show."""

    type: Literal["error"]
    value: str


class ChatEventOut(
    RootModel[
        Annotated[
            SessionIdEvent
            | ToolEventOut
            | NotesUpdatedEventOut
            | SourcesEventOut
            | ChunkEventOut
            | DoneEventOut
            | ErrorEventOut,
            Field(discriminator="type"),
        ]
    ]
):
    """The JSON `data` of one server-sent event of a chat turn (seed 002's event set)."""
