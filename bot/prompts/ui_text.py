"""The bot's own texts for people (Discord notices and replies, the terminal), per language.

Each language has one catalogue, bot/prompts/ui/<language>.json, holding exactly the fields of
`UiText`; a missing, unknown or non-string entry is an error when the catalogue is loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources

from bot.prompts import FALLBACK_LANGUAGE, available_languages

UI_DIR = "ui"


class UiCatalogueError(ValueError):
    """A UI-text catalogue does not match `UiText`."""


@dataclass(frozen=True)
class UiText:
    """The bot's own short texts in one language."""

    sources: str
    error_prefix: str
    cooldown: str
    empty_mention: str
    image_skipped: str
    image_unreadable: str
    too_many_images: str
    file_too_large: str
    file_unsupported: str
    file_failed: str
    not_in_conversation: str
    access_denied: str
    admin_only: str
    generic_error: str
    model_unavailable: str
    presence_model_down: str
    thread_fallback: str
    note_saved: str
    note_created: str
    note_appended: str
    note_deleted: str
    note_linked: str
    note_already_linked: str
    note_unlinked: str
    note_not_linked: str
    note_not_found: str
    notes_empty: str
    note_empty_body: str
    memory_empty: str
    memory_header: str
    memory_forgotten: str
    member_memory_empty: str
    member_memory_header: str
    member_memory_is_off: str
    member_fact_shared_mark: str
    member_fact_forgotten: str
    member_fact_not_found: str
    member_facts_forgotten: str
    member_forget_usage: str
    member_memory_off: str
    member_memory_on: str
    member_fact_shared: str
    member_fact_unshared: str
    member_erase_confirm: str
    member_erased: str
    member_remembered: str
    member_not_remembered: str
    member_not_remembered_off: str
    member_not_remembered_full: str
    member_not_remembered_invalid: str
    member_not_remembered_failed: str
    model_show: str
    model_source_thread: str
    model_source_space: str
    model_source_global: str
    model_none: str
    model_set_thread: str
    model_set_space: str
    model_space_cleared: str
    model_unknown: str
    model_no_presets: str
    export_done: str
    export_too_large: str
    export_untitled: str
    export_session_line: str
    export_created_line: str
    export_model_line: str
    export_summarised: str
    reset_done: str
    topic_enabled: str
    topic_disabled: str
    topic_not_configured: str
    topic_status: str
    topic_posted: str
    topic_not_posted: str
    topic_scheduled: str
    topic_bad_value: str
    topic_text_channel_only: str
    topic_state_on: str
    topic_state_off: str
    knowledge_empty: str
    knowledge_header: str
    knowledge_not_found: str
    knowledge_deleted: str
    knowledge_regenerated: str
    knowledge_regenerate_failed: str
    tools_builtin: str
    tools_mcp: str
    terminal_banner: str
    terminal_commands: str
    terminal_log_note: str
    terminal_page_settings: str
    terminal_log_unwritable: str
    terminal_help: str
    terminal_unknown_command: str
    terminal_new_session: str
    terminal_model_show: str
    terminal_model_set: str
    terminal_model_default: str
    terminal_provider_address: str
    terminal_stopped: str
    terminal_remembered: str
    terminal_error: str
    runner_no_token: str
    runner_intents_disabled: str
    runner_bad_token: str
    busy: str
    approval_question: str
    approval_allow: str
    approval_deny: str
    approval_allowed: str
    approval_denied: str
    approval_timed_out: str
    approval_not_yours: str
    terminal_approval_question: str
    turn_interrupted: str
    knowledge_saving: str
    knowledge_save_failed: str

    def not_remembered(self, reason: str | None) -> str:
        """The member's receipt for a fact not saved, saying why (a `NotSavedReason`)."""
        why = {
            "memory_off": self.member_not_remembered_off,
            "full": self.member_not_remembered_full,
            "invalid": self.member_not_remembered_invalid,
        }.get(reason or "", self.member_not_remembered_failed)
        return self.member_not_remembered.format(why=why)


def parse_ui_text(data: object, source: str = "catalogue") -> UiText:
    """`data` (a parsed catalogue) as UiText: exactly its fields, every value a string."""
    if not isinstance(data, dict):
        raise UiCatalogueError(f"{source}: expected a JSON object of texts")
    expected = {field.name for field in fields(UiText)}
    problems: list[str] = []
    if missing := sorted(expected - data.keys()):
        problems.append(f"missing {', '.join(missing)}")
    if unknown := sorted(data.keys() - expected):
        problems.append(f"unknown {', '.join(unknown)}")
    if not_text := sorted(key for key, value in data.items() if not isinstance(value, str)):
        problems.append(f"not a string: {', '.join(not_text)}")
    if problems:
        raise UiCatalogueError(f"{source}: {'; '.join(problems)}")
    return UiText(**data)


@cache
def load_ui_text(language: str) -> UiText:
    """The catalogue of `language`, validated (read once)."""
    name = f"{language}.json"
    path = resources.files("bot.prompts").joinpath(UI_DIR, name)
    return parse_ui_text(json.loads(path.read_text("utf-8")), f"{UI_DIR}/{name}")


def ui_text(language: str) -> UiText:
    """The UI texts for `language` (English when there is no catalogue for it)."""
    return load_ui_text(language if language in available_languages() else FALLBACK_LANGUAGE)
