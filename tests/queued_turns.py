"""A burst of messages queued in one conversation: a scripted model and the checks every front
end's burst test makes on what the model received and what was stored (issue 31).

The model answers each chat turn with `ANSWER_PREFIX` + the text of the last user message it
was sent, so an answer names the message it answered; summary and condense requests (their
system prompts say which) get a summary.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable

from bot.prompts import prompts_for
from bot.store.repos.memories import Memory
from bot.store.repos.messages import StoredMessage
from tests.fakes.llm_server import RecordedRequest, Text

ANSWER_PREFIX = "Answer to: "
NO_USER_MESSAGE = "(no user message)"
SUMMARY_TEXT = "SUMMARY of earlier messages"
CONDENSED_TEXT = "CONDENSED summaries"


def _system_texts(request: RecordedRequest) -> list[str]:
    return [str(m.get("content")) for m in request.messages if m.get("role") == "system"]


def is_summary(request: RecordedRequest) -> bool:
    """A request of the summariser (to summarise messages or to condense summaries)."""
    prompts = prompts_for("en")
    systems = _system_texts(request)
    return bool(systems) and systems[0] in (prompts["summarize_system"], prompts["condense_system"])


def last_user_text(request: RecordedRequest) -> str | None:
    """The content of the last user message of a request, if it has one."""
    users = [m for m in request.messages if m.get("role") == "user"]
    return str(users[-1].get("content")) if users else None


def model_reply(request: RecordedRequest) -> Text:
    """The burst's model: an answer naming the message answered, or a summary."""
    if is_summary(request):
        prompts = prompts_for("en")
        condensing = _system_texts(request)[0] == prompts["condense_system"]
        return Text(CONDENSED_TEXT if condensing else SUMMARY_TEXT)
    return Text(ANSWER_PREFIX + (last_user_text(request) or NO_USER_MESSAGE))


def turn_requests(requests: Iterable[RecordedRequest]) -> list[RecordedRequest]:
    """The chat requests of turns (not of the summariser)."""
    return [request for request in requests if request.is_chat and not is_summary(request)]


def check_every_turn_had_its_message(requests: Iterable[RecordedRequest], shown: list[str]) -> None:
    """Each turn request ends with its own user message: one of `shown`, each exactly once."""
    turns = turn_requests(requests)
    lasts = [request.messages[-1] if request.messages else {} for request in turns]
    missing = [m for m in lasts if m.get("role") != "user"]
    assert not missing, (
        f"{len(missing)} of {len(turns)} turn requests carry no user message last: "
        f"{[m.get('role') for m in missing][:5]}"
    )
    seen = Counter(str(m.get("content")) for m in lasts)
    assert seen == Counter(shown), seen


def check_answered_once(
    stored: list[StoredMessage], texts: list[str], shown: Callable[[str], str]
) -> None:
    """Every message of `texts` is stored once and answered once, by the answer naming it."""
    users = [m for m in stored if m.role == "user" and m.content in texts]
    assert sorted(m.content for m in users) == sorted(texts)
    answers: dict[int, list[str]] = {}
    for message in stored:
        if message.role == "assistant" and message.reply_to is not None:
            answers.setdefault(message.reply_to, []).append(message.content)
    for user in users:
        assert answers.get(user.id) == [ANSWER_PREFIX + shown(user.content)], (
            user.content,
            answers.get(user.id),
        )


def check_summarised_answered_only(
    stored: list[StoredMessage], memories: list[Memory], threshold: int
) -> None:
    """Summaries were made, each user message archived only after its answer was stored, and
    the live history is short again."""
    assert memories, "the summariser ran"
    archived = [m for m in stored if m.archived_at is not None]
    assert archived, "answered messages were archived"
    answered_at = {m.reply_to: m.created_at for m in stored if m.role == "assistant" and m.reply_to}
    early = [
        m.content
        for m in archived
        if m.role == "user" and not answered_at.get(m.id, "~") <= str(m.archived_at)
    ]
    assert not early, f"archived before their turn was answered: {early}"
    first_archived = min(str(m.archived_at) for m in archived)
    assert first_archived < max(answered_at.values()), "summaries ran while turns were queued"
    live = [m for m in stored if m.archived_at is None]
    assert len(live) < threshold, [m.content for m in live]


def burst_texts(count: int, speakers: Iterable[str] = ("",)) -> list[str]:
    """`count` distinct messages, spread over `speakers` in turn."""
    names = itertools.cycle(speakers)
    return [f"{next(names)}message {index:02d} of the burst".strip() for index in range(count)]
