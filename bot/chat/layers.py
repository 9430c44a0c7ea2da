"""The memory layers of the prompt: saved-knowledge headings (layer 1), note titles (2), linked
note bodies (2.5), local knowledge-base files (3) and, after long-term memory (4), related
memories from the space's other conversations and the speaking member's facts.

Each layer drafts its text at seed 002's limits (15 headings, titles + 40 characters, linked
pages up to SESSION_NOTES_CONTENT_LIMIT characters each, the top-k KB files in full); the
context builder decides what each may use and the draft's `shorten` cuts it to that, ending
with a marker that says what was left out and how to get it. Every layer is one system message
that starts with a bracketed header line (texts in bot/prompts/<language>.json). A failing
layer logs and contributes nothing: memory is an aid, never a reason for a turn to fail.
Every layer reads only the space of the conversation (`ContextRequest.space_id`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.chat.budget.tokens import estimate_tokens, truncate_to_tokens
from bot.chat.context import ContextLayer, ContextRequest, Draft
from bot.memory.knowledge import KnowledgeService
from bot.memory.member_memory import MemberMemory
from bot.memory.notes import NoteOutline, NotesService
from bot.memory.recall import RecallLabels, RecallService, hit_heading, hit_lines
from bot.prompts import Prompts, prompts_for
from bot.store.repos.notes import OUTLINE_ON_LOOP
from bot.tools.kb_tools import KBFile, continuation
from bot.utils.off_loop import off_loop_if

log = logging.getLogger(__name__)

PREVIEW_CHARS = 40
# A cut body shorter than this says too little: the document shows only its heading and marker.
MIN_BODY_TOKENS = 8
# The notes layer remembers its cuts for this many budgets (the budget moves as talk grows).
MAX_REMEMBERED_CUTS = 16


def _prompts(request: ContextRequest) -> Prompts:
    return prompts_for(request.settings.language)


def _number(value: int) -> str:
    return f"{value:,}"


def fit_lines(
    header: str, lines: Sequence[str], budget: int, tail: str = "", *, items: int | None = None
) -> str | None:
    """Header plus as many whole lines as fit (from the start), plus `tail` if any were cut.

    `tail` may hold `{count}`: the number of left-out list items ("- " lines; `items`, when
    given, is how many `lines` hold, so they need not be counted again). When no line fits,
    the header and `tail` alone say what is missing (None if even they do not fit).
    """
    if not lines:
        return None
    spent = estimate_tokens(header)
    kept: list[str] = []
    for index, line in enumerate(lines):
        cost = estimate_tokens(line) + 1
        is_last = index == len(lines) - 1
        reserve = 0 if is_last or not tail else estimate_tokens(tail) + 2
        if spent + cost + reserve > budget:
            break
        kept.append(line)
        spent += cost
    if not kept and not (tail and spent + estimate_tokens(tail) + 2 <= budget):
        return None
    if len(kept) < len(lines) and tail:
        if items is None:
            left = sum(1 for line in lines[len(kept) :] if line.startswith("- "))
        else:
            left = items - sum(1 for line in kept if line.startswith("- "))
        kept.append(tail.format(count=left))
    return "\n".join([header, *kept])


@dataclass(frozen=True)
class Document:
    """One body of a full-text layer: its heading, its text within the seed's limit, the size
    of the whole source, and the marker for a body cut after n characters."""

    heading: str
    body: str
    total: int
    mark: Callable[[int], str]

    def render(self) -> str:
        """Heading and body; marked when the seed's limit already cut the source."""
        text = self.body if len(self.body) >= self.total else self.body + self.mark(len(self.body))
        return f"{self.heading}\n{text}"

    def cut(self, room: int) -> str | None:
        """Heading and as much of the body as fits `room` tokens, with the cut marked."""
        full = self.render()
        if estimate_tokens(full) <= room:
            return full
        mark_cost = estimate_tokens(self.mark(len(self.body)))
        body_room = room - estimate_tokens(self.heading) - 1 - mark_cost - 1
        if body_room < MIN_BODY_TOKENS:
            stub = self.heading + self.mark(0)
            return stub if estimate_tokens(stub) <= room else None
        kept = truncate_to_tokens(self.body, body_room)
        if kept != self.body:
            kept = kept.removesuffix("…")
        return f"{self.heading}\n{kept}{self.mark(len(kept))}"


def render_documents(header: str, documents: Sequence[Document]) -> str | None:
    """Header plus every document in full (within the seed's limits)."""
    if not documents:
        return None
    return "\n\n".join([header, *(document.render() for document in documents)])


def fit_documents(header: str, documents: Sequence[Document], budget: int) -> str | None:
    """Header plus documents sharing `budget` fairly.

    Each document may use an equal share of what is left, so a short one leaves more room
    for the next; a body that does not fit is cut at a line or word end and marked.
    """
    if not documents:
        return None
    remaining = budget - estimate_tokens(header) - 1
    parts: list[str] = [header]
    for index, document in enumerate(documents):
        share = remaining // (len(documents) - index)
        block = document.cut(share - 2)
        if block is None:
            continue
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

    async def draft(self, request: ContextRequest) -> Draft | None:
        """Headings only — no bodies, no sources; cutting drops the oldest first."""
        limit = request.settings.knowledge_context_limit
        if limit <= 0:
            return None
        try:
            entries = await self._knowledge.latest(request.space_id, limit)
        except Exception:
            log.exception("knowledge layer failed")
            return None
        if not entries:
            return None
        prompts = _prompts(request)
        header = prompts["layer_knowledge_header"]
        lines = [f"- [#{e.id}] {e.title} ({e.created_at[:10]})" for e in entries]
        more = prompts["layer_knowledge_more"]
        return Draft(
            "\n".join([header, *lines]), lambda budget: fit_lines(header, lines, budget, more)
        )


def _preview(item: NoteOutline) -> str:
    text = " ".join(item.preview.split())
    if not text:
        return ""
    cut = text[:PREVIEW_CHARS]
    return cut + ("…" if item.length > PREVIEW_CHARS or len(text) > PREVIEW_CHARS else "")


def note_title_lines(
    items: Sequence[NoteOutline], linked: set[int], prompts: Prompts, *, previews: bool
) -> list[str]:
    """The page list grouped by "## section" in position order (sections are contiguous)."""
    lines: list[str] = []
    has_sections = any(item.section for item in items)
    current: str | None = None
    for item in items:
        if has_sections and item.section != current:
            current = item.section
            lines.append(f"## {current or prompts['layer_notes_no_section']}")
        line = f"- {item.title}"
        if item.id in linked:
            line += prompts["layer_notes_linked"]
        elif previews and (preview := _preview(item)):
            line += f": {preview}"
        lines.append(line)
    return lines


class NoteTitlesLayer:
    """Layer 2: every page's title and first 40 characters, grouped by section.

    The draft is kept until the space's outline (`NotesService.outline_snapshot`), the
    session's links or the language change, with its cuts by budget: a turn does not render
    every page again.
    """

    name = "notes"

    def __init__(self, notes: NotesService) -> None:
        self._notes = notes
        # space → (outline, linked pages, language, session) and the draft made of them.
        self._drafts: dict[str, tuple[tuple[object, ...], Draft]] = {}

    async def draft(self, request: ContextRequest) -> Draft | None:
        """Titles with previews; cut: without previews (marked), then fewer pages (counted)."""
        try:
            # Extra characters so collapsing blank lines still leaves a full preview.
            items = await self._notes.outline_snapshot(request.space_id, PREVIEW_CHARS * 3)
            if not items:  # most spaces: no read of the session's links for an empty list
                return None
            linked = tuple(await self._notes.linked_page_ids(request.space_id, request.session_id))
        except Exception:
            log.exception("notes layer failed")
            return None
        key = (items, linked, request.settings.language)
        cached = self._drafts.get(request.space_id)
        if cached is not None and cached[0][0] is items and cached[0][1:] == key[1:]:
            return cached[1]
        draft = await off_loop_if(
            len(items) > OUTLINE_ON_LOOP, _note_titles_draft, items, set(linked), _prompts(request)
        )
        self._drafts[request.space_id] = (key, draft)
        return draft


def _note_titles_draft(items: Sequence[NoteOutline], linked: set[int], prompts: Prompts) -> Draft:
    """The notes layer's draft; its cuts are remembered by budget. Its lines are kept as
    tuples, which the garbage collector stops tracking."""
    header = prompts.format("layer_notes_header", preview_chars=PREVIEW_CHARS)
    full = tuple(note_title_lines(items, linked, prompts, previews=True))
    titles = tuple(note_title_lines(items, linked, prompts, previews=False))
    without_previews = (
        "\n".join([header, prompts["layer_notes_previews_cut"], *titles]) if titles != full else ""
    )
    cost = estimate_tokens(without_previews)
    cuts: dict[int, str | None] = {}

    def shorten(budget: int) -> str | None:
        if budget not in cuts:
            if len(cuts) >= MAX_REMEMBERED_CUTS:
                cuts.clear()
            if without_previews and cost <= budget:
                cuts[budget] = without_previews
            else:
                more = prompts["layer_notes_more"]
                cuts[budget] = fit_lines(header, titles, budget, more, items=len(items))
        return cuts[budget]

    draft = Draft("\n".join([header, *full]), shorten)
    _ = draft.demand  # counted here: in the worker thread when the outline is long
    return draft


class LinkedNotesLayer:
    """Layer 2.5: full bodies of the session's linked pages, ≤ SESSION_NOTES_CONTENT_LIMIT each."""

    name = "linked_notes"

    def __init__(self, notes: NotesService) -> None:
        self._notes = notes

    async def draft(self, request: ContextRequest) -> Draft | None:
        """Each linked page under "### title"; a cut says where read_note continues."""
        try:
            page_ids = await self._notes.linked_page_ids(request.space_id, request.session_id)
            pages = await self._notes.get_many(request.space_id, page_ids)
        except Exception:
            log.exception("linked notes layer failed")
            return None
        prompts = _prompts(request)
        limit = max(0, request.settings.session_notes_content_limit)
        documents: list[Document] = []
        for page in pages:
            total = len(page.content)

            def mark(shown: int, page_id: int = page.id, total: int = total) -> str:
                return prompts.format(
                    "layer_linked_notes_cut",
                    shown=_number(shown),
                    total=_number(total),
                    page=f"#{page_id}",
                    offset=shown,
                )

            documents.append(Document(f"### {page.title}", page.content[:limit], total, mark))
        header = prompts["layer_linked_notes_header"]
        full = render_documents(header, documents)
        if full is None:
            return None
        return Draft(full, lambda budget: fit_documents(header, documents, budget))


class KBHitLike(KBFile, Protocol):
    """What LocalKBLayer needs of a local KB hit (bot.memory.local_kb.KBHit fits)."""

    @property
    def score(self) -> float:
        """How well it matches."""
        ...


# (query, space id) → the files of the knowledge base that space may see, best first.
KBSearch = Callable[[str, str], Awaitable[Sequence[KBHitLike]]]


class LocalKBLayer:
    """Layer 3: the local Markdown files that match the user's latest message, in full."""

    name = "local_kb"

    def __init__(self, search: KBSearch) -> None:
        self._search = search

    async def draft(self, request: ContextRequest) -> Draft | None:
        """Matching files, best first; a cut one says how much of it is shown."""
        if not request.user_text.strip():
            return None
        try:
            hits = await self._search(request.user_text, request.space_id)
        except Exception:
            log.exception("local knowledge base layer failed")
            return None
        prompts = _prompts(request)
        documents: list[Document] = []
        for hit in hits:
            total = len(hit.content)

            def mark(shown: int, total: int = total, path: str = hit.path) -> str:
                return prompts.format(
                    "layer_local_kb_cut",
                    shown=_number(shown),
                    total=_number(total),
                    token=continuation(path, shown),
                )

            heading = f"### {hit.title or hit.path} ({hit.path})"
            documents.append(Document(heading, hit.content, total, mark))
        header = prompts["layer_local_kb_header"]
        full = render_documents(header, documents)
        if full is None:
            return None
        return Draft(full, lambda budget: fit_documents(header, documents, budget))


class MemberFactsLayer:
    """After long-term memory: the speaking member's facts (oldest first), then the facts other
    members of the space shared. Only in turns whose member is known; nothing when none."""

    name = "member"

    def __init__(self, members: MemberMemory) -> None:
        self._members = members

    async def draft(self, request: ContextRequest) -> Draft | None:
        """One "- fact" line each; cutting keeps the first lines and counts the rest."""
        if request.member_id is None:
            return None
        try:
            facts = await self._members.facts_for_turn(request.space_id, request.member_id)
        except Exception:
            log.exception("member memory layer failed")
            return None
        if not facts:
            return None
        prompts = _prompts(request)
        header = prompts["layer_member_header"]
        lines = [f"- {fact.fact}" for fact in facts.own]
        if facts.shared:
            lines.append(prompts["layer_member_shared"])
            lines += [
                f"- {fact.member_name or fact.member_id}: {fact.fact}" for fact in facts.shared
            ]
        more = prompts["layer_member_more"]
        return Draft(
            "\n".join([header, *lines]), lambda budget: fit_lines(header, lines, budget, more)
        )


class RelatedMemoriesLayer:
    """After long-term memory: the few best recall hits of the space's *other* conversations
    for the user's latest message that pass recall's relevance threshold
    (`bot.store.reads.recall_rank.is_relevant`); nothing when none does. A cut hit is marked
    with the recall call that shows more."""

    name = "related"

    def __init__(self, recall: RecallService) -> None:
        self._recall = recall

    async def draft(self, request: ContextRequest) -> Draft | None:
        """The relevant hits, best first, each under its who · when · where heading."""
        if not request.user_text.strip():
            return None
        try:
            terms, hits = await self._recall.related(
                request.space_id, request.user_text, request.session_id, request.channel_id
            )
        except Exception:
            log.exception("related memories layer failed")
            return None
        if not hits:
            return None
        prompts = _prompts(request)
        labels = RecallLabels.of(prompts)
        marker = prompts.format("layer_recall_cut", query=" ".join(terms.all))
        documents = []
        for hit in hits:
            body = hit_lines(hit, labels)
            documents.append(
                Document(hit_heading(hit, labels), body, len(body), lambda _shown: marker)
            )
        header = prompts["layer_recall_header"]
        full = render_documents(header, documents)
        if full is None:
            return None
        return Draft(full, lambda budget: fit_documents(header, documents, budget))


def default_layers(
    knowledge: KnowledgeService | None,
    notes: NotesService | None,
    local_kb_search: KBSearch | None = None,
) -> list[ContextLayer]:
    """Layers 1, 2, 2.5, 3 in seed 002's order (absent ones skipped); the builder adds 4."""
    layers: list[ContextLayer] = []
    if knowledge is not None:
        layers.append(KnowledgeHeadingsLayer(knowledge))
    if notes is not None:
        layers.append(NoteTitlesLayer(notes))
        layers.append(LinkedNotesLayer(notes))
    if local_kb_search is not None:
        layers.append(LocalKBLayer(local_kb_search))
    return layers
