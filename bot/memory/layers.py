"""The memory layers of the prompt, each fitted to its own token budget: saved-knowledge
headings (layer 1), note titles (2), linked note bodies (2.5) and local knowledge-base files (3).
Every layer reads only the space of the conversation (`ContextRequest.space_id`).

Every layer is one system message that starts with a bracketed header line saying what it is
and when to use a tool instead. Items are dropped whole from the end (or shortened, for the
two full-text layers) so a layer never exceeds its budget; a layer that cannot fit its header
and one item contributes nothing. A failing layer logs and contributes nothing: memory is an
aid, never a reason for a turn to fail.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from bot.chat.context import ContextRequest, LayerSlot
from bot.chat.tokens import estimate_tokens, truncate_to_tokens
from bot.memory.knowledge import KnowledgeService
from bot.memory.notes import NoteOutline, NotesService

log = logging.getLogger(__name__)

PREVIEW_CHARS = 40

# Shares of the prompt budget (window − answer reserve − tool schemas). They are caps, not
# reservations: unused room goes to the conversation. Layer 3 holds whole curated files and
# outranks web search, so it gets the most; 2.5 holds the pages the user chose; 1 and 2 are
# tables of contents (15 headings ≈ 300 tokens; a title + 40 characters ≈ 20 tokens), so they
# are cheap. With long-term memory's 0.15 the layers leave at least 30 % for the conversation.
KNOWLEDGE_SHARE = 0.05
NOTES_SHARE = 0.07
LINKED_NOTES_SHARE = 0.18
LOCAL_KB_SHARE = 0.25

HEADERS: dict[str, dict[str, str]] = {
    "knowledge": {
        "en": (
            "[Accumulated knowledge — headings of earlier web searches, newest first; bodies "
            "are not shown. When one is relevant, read it with read_knowledge(entry_id) instead "
            "of searching again, unless it may be outdated.]"
        ),
        "ja": (
            "[蓄積知識 — 過去の Web 検索の見出し一覧（新しい順、本文は含まない）。関係があれば、"
            "古くなっている恐れがない限り再検索せず read_knowledge(entry_id) で本文を読むこと。]"
        ),
    },
    "notes": {
        "en": (
            "[Shared notes — pages the users and you edit together: titles and the first "
            f"{PREVIEW_CHARS} characters only. Read a page with read_note(title); change one "
            "with write_note. Pages marked (linked) are shown in full below: do not read them "
            "again.]"
        ),
        "ja": (
            "[共有ノート — ユーザーとあなたが共同編集するページ。タイトルと本文の先頭 "
            f"{PREVIEW_CHARS} 文字のみ。本文は read_note(title) で読み、更新は write_note で"
            "行うこと。(紐付け済み) のページは下に全文があるので読み直さないこと。]"
        ),
    },
    "linked_notes": {
        "en": (
            "[Linked notes — the full text of the shared note pages the user attached to this "
            "conversation.]"
        ),
        "ja": "[参照指定ノート — ユーザーがこの会話に紐付けた共有ノートのページ本文。]",
    },
    "local_kb": {
        "en": (
            "[Local knowledge base — curated documents matching the latest message. They "
            "outrank web search: if they answer the question, answer from them and do not "
            "search the web.]"
        ),
        "ja": (
            "[ローカルナレッジベース — 直近の発言に関連する厳選文書。Web 検索より優先度が高い。"
            "これで答えられるなら Web 検索せず、これに基づいて答えること。]"
        ),
    },
}
LINKED_MARK = {"en": " (linked — full text below)", "ja": " (紐付け済み — 全文は下)"}
MORE_PAGES = {
    "en": "- … {count} more page(s): ask read_note for a title you need.",
    "ja": "- … ほか {count} ページ（必要なタイトルは read_note で）",
}
CUT_MARK = {
    "en": "\n[… cut here; read_note(title) returns the rest]",
    "ja": "\n[… ここで省略。続きは read_note(title) で]",
}
KB_CUT_MARK = {"en": "\n[… cut here]", "ja": "\n[… ここで省略]"}
NO_SECTION = {"en": "(no section)", "ja": "(セクションなし)"}


def _lang(request: ContextRequest) -> str:
    return request.settings.language if request.settings.language in ("ja", "en") else "en"


def _header(name: str, request: ContextRequest) -> str:
    return HEADERS[name][_lang(request)]


def fit_lines(header: str, lines: Sequence[str], budget: int, tail: str = "") -> str | None:
    """Header plus as many whole lines as fit (from the start), plus `tail` if any were cut."""
    if not lines:
        return None
    spent = estimate_tokens(header)
    kept: list[str] = []
    for index, line in enumerate(lines):
        cost = estimate_tokens(line) + 1
        is_last = index == len(lines) - 1
        reserve = 0 if is_last or not tail else estimate_tokens(tail) + 1
        if spent + cost + reserve > budget:
            break
        kept.append(line)
        spent += cost
    if not kept:
        return None
    if len(kept) < len(lines) and tail:
        kept.append(tail.format(count=len(lines) - len(kept)))
    return "\n".join([header, *kept])


def fit_documents(
    header: str, documents: Sequence[tuple[str, str]], budget: int, cut_mark: str
) -> str | None:
    """Header plus (heading, body) documents, sharing `budget` fairly.

    Each document may use an equal share of what is left, so a short one leaves more room
    for the next; a body that does not fit is cut at a line or word end and marked.
    """
    if not documents:
        return None
    remaining = budget - estimate_tokens(header) - 1
    parts: list[str] = [header]
    mark_cost = estimate_tokens(cut_mark)
    for index, (heading, body) in enumerate(documents):
        share = remaining // (len(documents) - index)
        head_cost = estimate_tokens(heading) + 2
        room = share - head_cost
        if room <= mark_cost + 8:
            continue
        text = body
        if estimate_tokens(body) > room:
            # truncate_to_tokens may add a one-token ellipsis beyond its budget.
            text = truncate_to_tokens(body, room - mark_cost - 1) + cut_mark
        block = f"{heading}\n{text}"
        remaining -= estimate_tokens(block) + 2
        parts.append(block)
    if len(parts) == 1:
        return None
    return "\n\n".join(parts)


class KnowledgeHeadingsLayer:
    """Layer 1: the latest KNOWLEDGE_CONTEXT_LIMIT knowledge headings ("- [#id] title (date)")."""

    name = "knowledge"

    def __init__(self, knowledge: KnowledgeService) -> None:
        self._knowledge = knowledge

    async def render(self, request: ContextRequest, budget_tokens: int) -> str | None:
        """Headings only — no bodies, no sources; the oldest are dropped first."""
        limit = request.settings.knowledge_context_limit
        if limit <= 0 or budget_tokens <= 0:
            return None
        try:
            entries = await self._knowledge.latest(request.space_id, limit)
        except Exception:
            log.exception("knowledge layer failed")
            return None
        lines = [f"- [#{e.id}] {e.title} ({e.created_at[:10]})" for e in entries]
        return fit_lines(_header(self.name, request), lines, budget_tokens)


def _preview(item: NoteOutline) -> str:
    text = " ".join(item.preview.split())
    if not text:
        return ""
    cut = text[:PREVIEW_CHARS]
    return cut + ("…" if item.length > PREVIEW_CHARS or len(text) > PREVIEW_CHARS else "")


def note_title_lines(
    items: Sequence[NoteOutline], linked: set[int], language: str, *, previews: bool
) -> list[str]:
    """The page list grouped by "## section" in position order (sections are contiguous)."""
    lines: list[str] = []
    has_sections = any(item.section for item in items)
    current: str | None = None
    for item in items:
        if has_sections and item.section != current:
            current = item.section
            lines.append(f"## {current or NO_SECTION[language]}")
        line = f"- {item.title}"
        if item.id in linked:
            line += LINKED_MARK[language]
        elif previews and (preview := _preview(item)):
            line += f": {preview}"
        lines.append(line)
    return lines


class NoteTitlesLayer:
    """Layer 2: every page's title and first 40 characters, grouped by section."""

    name = "notes"

    def __init__(self, notes: NotesService) -> None:
        self._notes = notes

    async def render(self, request: ContextRequest, budget_tokens: int) -> str | None:
        """Titles with previews; without previews if that is what fits; then fewer pages."""
        if budget_tokens <= 0:
            return None
        try:
            # Extra characters so collapsing blank lines still leaves a full preview.
            items = await self._notes.outline(request.space_id, PREVIEW_CHARS * 3)
            linked = set(await self._notes.linked_page_ids(request.space_id, request.session_id))
        except Exception:
            log.exception("notes layer failed")
            return None
        if not items:
            return None
        language = _lang(request)
        header = _header(self.name, request)
        for previews in (True, False):
            lines = note_title_lines(items, linked, language, previews=previews)
            text = "\n".join([header, *lines])
            if estimate_tokens(text) <= budget_tokens:
                return text
        lines = note_title_lines(items, linked, language, previews=False)
        return fit_lines(header, lines, budget_tokens, MORE_PAGES[language])


class LinkedNotesLayer:
    """Layer 2.5: full bodies of the session's linked pages, ≤ SESSION_NOTES_CONTENT_LIMIT each."""

    name = "linked_notes"

    def __init__(self, notes: NotesService) -> None:
        self._notes = notes

    async def render(self, request: ContextRequest, budget_tokens: int) -> str | None:
        """Each linked page under "### title", cut at the character limit and the budget."""
        if budget_tokens <= 0:
            return None
        try:
            page_ids = await self._notes.linked_page_ids(request.space_id, request.session_id)
            pages = await self._notes.get_many(request.space_id, page_ids)
        except Exception:
            log.exception("linked notes layer failed")
            return None
        language = _lang(request)
        limit = max(0, request.settings.session_notes_content_limit)
        documents = []
        for page in pages:
            body = page.content[:limit]
            if len(page.content) > limit:
                body = body.rstrip() + CUT_MARK[language]
            documents.append((f"### {page.title}", body))
        return fit_documents(
            _header(self.name, request), documents, budget_tokens, CUT_MARK[language]
        )


class KBHitLike(Protocol):
    """What LocalKBLayer needs of a local KB hit (bot.memory.local_kb.KBHit fits)."""

    @property
    def path(self) -> str:
        """Path of the file inside the knowledge base."""
        ...

    @property
    def title(self) -> str:
        """The file's title."""
        ...

    @property
    def content(self) -> str:
        """The file's text."""
        ...

    @property
    def score(self) -> float:
        """How well it matches."""
        ...


# (query, space id) → the files of the knowledge base that space may see, best first.
KBSearch = Callable[[str, str], Awaitable[Sequence[KBHitLike]]]


class LocalKBLayer:
    """Layer 3: the local Markdown files that match the user's latest message."""

    name = "local_kb"

    def __init__(self, search: KBSearch) -> None:
        self._search = search

    async def render(self, request: ContextRequest, budget_tokens: int) -> str | None:
        """Matching files, best first, sharing the budget; cut ones are marked."""
        if budget_tokens <= 0 or not request.user_text.strip():
            return None
        try:
            hits = await self._search(request.user_text, request.space_id)
        except Exception:
            log.exception("local knowledge base layer failed")
            return None
        documents = [(f"### {hit.title or hit.path} ({hit.path})", hit.content) for hit in hits]
        language = _lang(request)
        return fit_documents(
            _header(self.name, request), documents, budget_tokens, KB_CUT_MARK[language]
        )


def default_layer_slots(
    knowledge: KnowledgeService | None,
    notes: NotesService | None,
    local_kb_search: KBSearch | None = None,
) -> list[LayerSlot]:
    """Layers 1, 2, 2.5, 3 in that order with their budget shares (absent ones skipped)."""
    slots: list[LayerSlot] = []
    if knowledge is not None:
        slots.append(LayerSlot(KnowledgeHeadingsLayer(knowledge), KNOWLEDGE_SHARE))
    if notes is not None:
        slots.append(LayerSlot(NoteTitlesLayer(notes), NOTES_SHARE))
        slots.append(LayerSlot(LinkedNotesLayer(notes), LINKED_NOTES_SHARE))
    if local_kb_search is not None:
        slots.append(LayerSlot(LocalKBLayer(local_kb_search), LOCAL_KB_SHARE))
    return slots
