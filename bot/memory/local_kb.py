"""The local Markdown knowledge base: files embedded once per content change, searched by
cosine similarity against the latest user message, or by BM25 when no embedding model answers.

Spaces: the operator's files under kb_dir are shared with every space; `spaces/<guild id>/`
(or `spaces/<space dir>/`, e.g. `spaces/dm_42`) is seen only in that space, and
`web_search/<space dir>/` (saved searches) only in the space that saved them. A search names
its space and never returns another space's files.

Change detection: a search compares a stat snapshot — the set of (path, mtime_ns, size) of
kb_dir/**/*.md, walked in a worker thread — with the one from the last sync, at most every
RESCAN_SECONDS (or at once after `invalidate()`, e.g. when knowledge was saved). Only when the
snapshot differs are files read and hashed, and only files whose sha256 changed are embedded.

A bad file costs only itself: a name that is not UTF-8, an unreadable file or a folder that
cannot be listed is left out with one warning (repeated only if it goes away and comes back),
and an unreadable file is not read again until its stamp changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from bot.memory.japanese import NounExtractor
from bot.memory.kb_files import (
    HEADING,
    RESCAN_SECONDS,
    Snapshot,
    read_files,
    scan_dir,
    title_of,
)
from bot.memory.kb_visibility import (
    SPACES_FOLDER,
    WEB_SEARCH_FOLDER,
    visible_flags,
    visible_in,
)
from bot.memory.vectors import VectorIndex, normalise
from bot.store.repos.local_kb_docs import KBDocRow, LocalKBDocRepository
from bot.text.bm25 import BM25Index
from bot.text.terms import bigram_terms
from bot.utils.off_loop import off_loop_if

log = logging.getLogger(__name__)

__all__ = ["SPACES_FOLDER", "WEB_SEARCH_FOLDER", "KBHit", "LocalKnowledgeBase", "visible_in"]

# Embedding models read 512-8192 tokens and servers silently truncate the rest, so a file is
# embedded by its first EMBED_MAX_CHARS characters; the whole file is still what a hit returns.
EMBED_MAX_CHARS = 8000
BM25_MAX_CHARS = 64_000
EMBED_BATCH = 16
# After a failed embedding call, searches use BM25 without asking again for this long, so a
# missing or hanging embedding model costs nothing per request.
EMBED_RETRY_SECONDS = 300.0
# A BM25 hit must explain this share of the query's idf mass, and score at least this fraction
# of the best hit, so files sharing one common word with the question are not injected.
BM25_MIN_SHARE = 0.3
BM25_RELATIVE = 0.5
# Scoring more than this many vector components (documents × dimensions), or a BM25 index of
# more documents than BM25_OFF_LOOP_DOCS, runs in a worker thread: the event loop is not held.
VECTOR_OFF_LOOP = 2_000_000
BM25_OFF_LOOP_DOCS = 2000
# The stat walk of kb_dir (in a worker thread) may take this share of the time at most: with
# 50,000 files a walk takes ~0.2 s, so they are looked at every ~10 s rather than every 2 s.
SCAN_DUTY = 0.02


class Embedder(Protocol):
    """The part of the LLM gateway the knowledge base uses."""

    async def embed(self, texts: list[str], *, model: str | None = None) -> list[list[float]]:
        """One vector per text; raises bot.errors.LLMError when no embedding model answers."""
        ...


class KBSettings(Protocol):
    """The settings the knowledge base reads on every search (bot.config.Settings fits)."""

    @property
    def local_kb_top_k(self) -> int:
        """How many files at most."""
        ...

    @property
    def local_kb_min_score(self) -> float:
        """Lowest cosine similarity that counts as a hit."""
        ...

    @property
    def embed_model(self) -> str:
        """Embedding model; empty for the gateway's default."""
        ...


@dataclass(frozen=True)
class KBHit:
    """One knowledge-base file chosen for the prompt.

    `score` is the cosine similarity for "embedding" hits and, for "bm25" hits, the share of
    the query's idf mass the file explains (1.0 is every query term once).
    """

    path: str
    title: str
    content: str
    score: float
    method: Literal["embedding", "bm25"]


@dataclass(frozen=True)
class SyncReport:
    """What one sync did."""

    files: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    embedded: int = 0
    embed_calls: int = 0
    embedding_failed: bool = False

    def describe(self) -> str:
        """One readable sentence for the log."""
        text = (
            f"{self.files} files ({self.added} added, {self.updated} updated, "
            f"{self.removed} removed)"
        )
        if self.embedded:
            text += f", {self.embedded} embedded in {self.embed_calls} calls"
        if self.embedding_failed:
            text += "; embedding failed, so it ranks by keywords for now"
        return text


@dataclass
class _Doc:
    path: str
    title: str
    content: str
    content_hash: str
    mtime_ns: int
    size: int
    # Tuples of floats, not lists: the garbage collector stops tracking a tuple that holds
    # only numbers, so full collections no longer walk every vector of every file.
    vector: tuple[float, ...] | None = None
    model: str | None = None
    unit: tuple[float, ...] | None = field(default=None, repr=False)

    def set_vector(self, vector: Sequence[float] | None, model: str | None) -> None:
        self.vector = tuple(vector) if vector is not None else None
        self.model = model if vector is not None else None
        unit = normalise(vector) if vector is not None else None
        self.unit = tuple(unit) if unit is not None else None

    def embed_text(self) -> str:
        text = self.content
        if not HEADING.search(text[:2000]):
            text = f"{self.title}\n\n{text}"
        return text[:EMBED_MAX_CHARS]

    def row(self) -> KBDocRow:
        vector = list(self.vector) if self.vector is not None else None
        return KBDocRow(self.path, self.title, self.content_hash, vector, self.model)


@dataclass
class _SyncPlan:
    """What a sync keeps, stores and still has to embed."""

    docs: list[_Doc] = field(default_factory=list)
    upserts: list[_Doc] = field(default_factory=list)
    pending: list[_Doc] = field(default_factory=list)
    added: int = 0
    updated: int = 0

    @classmethod
    def of(
        cls,
        snapshot: Snapshot,
        contents: dict[str, tuple[str, str]],
        rows: dict[str, KBDocRow],
        key: str,
    ) -> _SyncPlan:
        """Compare the files on disk with the stored rows, in path order."""
        reusable = {
            row.content_hash: row.embedding
            for row in rows.values()
            if row.embedding is not None and row.embed_model == key
        }
        plan = cls()
        for path in sorted(snapshot):
            if path not in contents:
                continue  # could not be read: left out until it changes
            content, digest = contents[path]
            if not content.strip():
                continue
            mtime_ns, size = snapshot[path]
            doc = _Doc(path, title_of(content, path), content, digest, mtime_ns, size)
            plan.add(doc, rows.get(path), reusable, key)
        return plan

    def add(
        self, doc: _Doc, row: KBDocRow | None, reusable: dict[str, list[float]], key: str
    ) -> None:
        """Keep `doc`, reusing a stored vector of the same text and model when there is one."""
        self.docs.append(doc)
        digest = doc.content_hash
        if row is None:
            self.added += 1
        elif row.content_hash != digest:
            self.updated += 1
        if row is not None and row.content_hash == digest and row.embedding is not None:
            doc.set_vector(row.embedding, row.embed_model)
            if row.embed_model == key:
                return
        elif digest in reusable:
            doc.set_vector(reusable[digest], key)
            self.upserts.append(doc)
            return
        # Changed, new, or embedded with another model: the stored vector must go.
        self.pending.append(doc)
        if row is None or row.content_hash != digest:
            doc.set_vector(None, None)
            self.upserts.append(doc)


class LocalKnowledgeBase:
    """Markdown files under kb_dir (web_search/ included), cached in local_knowledge_docs."""

    def __init__(
        self,
        kb_dir: Path,
        repo: LocalKBDocRepository,
        embedder: Embedder,
        analyzer: NounExtractor,
        settings_fn: Callable[[], KBSettings],
        *,
        clock: Callable[[], float] = time.monotonic,
        embed_retry_seconds: float = EMBED_RETRY_SECONDS,
        rescan_interval: float = RESCAN_SECONDS,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        self._kb_dir = Path(kb_dir)
        self._on_synced = on_synced  # the documents of a sync are in place (and long-lived)
        self._rescan_interval = self._base_interval = rescan_interval
        self._scanned_at: float | None = None
        self._repo = repo
        self._embedder = embedder
        self._analyzer = analyzer
        self._settings_fn = settings_fn
        self._clock = clock
        self._retry_seconds = embed_retry_seconds
        self._lock = asyncio.Lock()
        self._docs: list[_Doc] = []
        self._snapshot: Snapshot | None = None
        self._bm25: BM25Index | None = None
        self._vectors: VectorIndex | None = None
        # Per space: which documents it may see (and that as a mask of the vector index's
        # rows), worked out once per set of documents rather than on every search.
        self._visible: dict[str, tuple[bool, ...]] = {}
        self._vector_masks: dict[str, Any] = {}
        # The documents (and model) known to all carry a vector of that model.
        self._embedded: tuple[list[_Doc], str] | None = None
        self._embed_failed_at: float | None = None
        self._syncs = 0
        # Files that failed to read, by path: (stamp when it failed, reason).
        self._unreadable: dict[str, tuple[tuple[int, int], str]] = {}
        # Bad files and folders already warned about (shown path → reason).
        self._warned: dict[str, str] = {}

    @property
    def sync_count(self) -> int:
        """How many times files were (re)read since start-up; stat checks do not count."""
        return self._syncs

    def _model_key(self) -> str:
        return self._settings_fn().embed_model

    def _embedding_usable(self) -> bool:
        failed_at = self._embed_failed_at
        return failed_at is None or self._clock() - failed_at >= self._retry_seconds

    def _embedding_failed(self, exc: Exception) -> None:
        if self._embed_failed_at is None:
            log.warning(
                "embedding unavailable (%s: %s); the local knowledge base ranks by BM25 and "
                "retries in %.0f s",
                type(exc).__name__,
                exc,
                self._retry_seconds,
            )
        else:
            log.debug("embedding still unavailable: %s", exc)
        self._embed_failed_at = self._clock()

    def _embedding_ok(self) -> None:
        if self._embed_failed_at is not None:
            log.info("embedding available again; the local knowledge base uses vectors")
            self._embed_failed_at = None

    async def _embed(self, texts: list[str]) -> tuple[list[list[float]], int]:
        model = self._model_key() or None
        vectors: list[list[float]] = []
        calls = 0
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start : start + EMBED_BATCH]
            calls += 1
            result = await self._embedder.embed(batch, model=model)
            if len(result) != len(batch):
                raise ValueError(f"embedder returned {len(result)} vectors for {len(batch)} texts")
            vectors.extend(result)
        return vectors, calls

    async def _embed_docs(self, docs: Sequence[_Doc]) -> int:
        """Embed `docs` in place; returns the number of calls. Raises when embedding fails."""
        key = self._model_key()
        vectors, calls = await self._embed([doc.embed_text() for doc in docs])
        for doc, vector in zip(docs, vectors, strict=True):
            doc.set_vector([float(x) for x in vector], key)
        self._vectors = None
        self._embedded = None
        return calls

    async def sync(self) -> SyncReport:
        """Rescan kb_dir now: embed new and changed files, drop rows of removed ones."""
        async with self._lock:
            snapshot, problems = await self._scan()
            report = await self._sync_locked(snapshot)
            self._warn_about(problems)
            return report

    async def _scan(self) -> tuple[Snapshot, dict[str, str]]:
        problems: dict[str, str] = {}
        snapshot = await asyncio.to_thread(scan_dir, self._kb_dir, problems)
        return snapshot, problems

    def _warn_about(self, scan_problems: dict[str, str]) -> None:
        """Warn once about each bad file or folder; forget the ones that are gone."""
        problems = scan_problems | {path: why for path, (_, why) in self._unreadable.items()}
        for path, why in sorted(problems.items()):
            if self._warned.get(path) != why:
                log.warning("knowledge base: skipping %s: %s", path, why)
        self._warned = problems

    def invalidate(self) -> None:
        """Files changed (e.g. knowledge saved): rescan before the next search."""
        self._scanned_at = None

    async def _refresh_if_changed(self) -> None:
        now = self._clock()
        if (
            self._snapshot is not None
            and self._scanned_at is not None
            and now - self._scanned_at < self._rescan_interval
        ):
            return
        self._scanned_at = now
        started = time.perf_counter()
        previous = self._snapshot
        problems: dict[str, str] = {}
        snapshot, changed = await asyncio.to_thread(_scan_changes, self._kb_dir, previous, problems)
        self._pace_scans(time.perf_counter() - started)
        if changed:
            async with self._lock:
                # Compared again only when another sync ran meanwhile (slow for many files).
                if self._snapshot is previous or snapshot != self._snapshot:
                    await self._sync_locked(snapshot)
        self._warn_about(problems)

    def _pace_scans(self, seconds: float) -> None:
        """Scan at most SCAN_DUTY of the time: a big folder is stat-walked less often."""
        if self._base_interval > 0:
            self._rescan_interval = max(self._base_interval, seconds / SCAN_DUTY)

    async def _sync_locked(self, snapshot: Snapshot) -> SyncReport:
        self._syncs += 1
        key = self._model_key()
        rows = {row.path: row for row in await self._repo.all()}
        contents = await self._contents(snapshot)
        plan = _SyncPlan.of(snapshot, contents, rows, key)
        embedded, calls, failed = await self._embed_pending(plan)
        paths = {doc.path for doc in plan.docs}
        removed = [path for path in rows if path not in paths]
        await self._repo.apply([doc.row() for doc in plan.upserts], removed)

        self._docs = plan.docs
        self._snapshot = snapshot
        self._bm25 = None
        self._visible = {}
        report = SyncReport(
            files=len(plan.docs),
            added=plan.added,
            updated=plan.updated,
            removed=len(removed),
            embedded=embedded,
            embed_calls=calls,
            embedding_failed=failed,
        )
        log.info("local knowledge base synced: %s", report.describe())
        if self._on_synced is not None:
            self._on_synced()
        return report

    async def _contents(self, snapshot: Snapshot) -> dict[str, tuple[str, str]]:
        """(text, sha256) of each file in `snapshot`: new and changed ones are read from disk,
        the rest come from memory. Files that vanished before being read leave `snapshot`;
        files that cannot be read stay in it (so they are not read again until they change)
        and are left out of the result."""
        known = {doc.path: doc for doc in self._docs}
        self._unreadable = {
            path: (stamp, why)
            for path, (stamp, why) in self._unreadable.items()
            if snapshot.get(path) == stamp
        }
        to_read = [
            path
            for path, stamp in snapshot.items()
            if path not in self._unreadable
            and (path not in known or (known[path].mtime_ns, known[path].size) != stamp)
        ]
        problems: dict[str, str] = {}
        read = (
            await asyncio.to_thread(read_files, self._kb_dir, to_read, problems) if to_read else {}
        )
        for path in to_read:
            if path in problems:
                self._unreadable[path] = (snapshot[path], problems[path])
            elif path not in read:
                snapshot.pop(path)  # vanished between the scan and the read: look again later
        unchanged = {
            path: (doc.content, doc.content_hash)
            for path, doc in known.items()
            if path in snapshot and path not in read and path not in self._unreadable
        }
        return unchanged | read

    async def _embed_pending(self, plan: _SyncPlan) -> tuple[int, int, bool]:
        """Embed the plan's pending documents; returns (embedded, calls, failed)."""
        if not plan.pending or not self._embedding_usable():
            return 0, 0, False
        try:
            calls = await self._embed_docs(plan.pending)
        except Exception as exc:  # any backend failure means: no vectors for now
            self._embedding_failed(exc)
            return 0, 0, True
        self._embedding_ok()
        queued = {id(doc) for doc in plan.upserts}
        plan.upserts.extend(doc for doc in plan.pending if id(doc) not in queued)
        return len(plan.pending), calls, False

    async def file(self, path: str, space: str) -> KBHit | None:
        """The file at `path` (as a search shows it) when `space` may see it, else None: only
        files the scan took (no hidden files, no symlinks, nothing outside kb_dir) are known."""
        await self._refresh_if_changed()
        if not visible_in(path, space):
            return None
        for doc in self._docs:
            if doc.path == path:
                return KBHit(doc.path, doc.title, doc.content, 1.0, "bm25")
        return None

    async def search(self, query: str, space: str) -> list[KBHit]:
        """Up to local_kb_top_k files `space` may see that are relevant to `query`: cosine ≥
        local_kb_min_score, or BM25 when no embedding model answers. Re-syncs first only if
        files changed on disk."""
        query = query.strip()
        settings = self._settings_fn()
        top_k = settings.local_kb_top_k
        if not query or top_k <= 0:
            return []
        await self._refresh_if_changed()
        docs = self._docs
        visible = await self._visible_to(space, docs)
        if not any(visible):
            return []
        if self._embedding_usable():
            hits = await self._search_embedding(query, space, top_k, settings.local_kb_min_score)
            if hits is not None:
                return hits
        return await self._search_bm25(query, docs, visible, top_k)

    async def _visible_to(self, space: str, docs: list[_Doc]) -> tuple[bool, ...]:
        """Which of `docs` `space` may see; worked out once per set of documents."""
        if docs is not self._docs:
            return await asyncio.to_thread(visible_flags, space, docs)
        flags = self._visible.get(space)
        if flags is None:
            flags = await asyncio.to_thread(visible_flags, space, docs)
            if docs is self._docs:
                self._visible[space] = flags
        return flags

    async def _search_embedding(
        self, query: str, space: str, top_k: int, min_score: float
    ) -> list[KBHit] | None:
        key = self._model_key()
        try:
            await self._embed_stale(key)
            [vector], _ = await self._embed([query[:EMBED_MAX_CHARS]])
            unit = normalise([float(x) for x in vector])
            if unit is None:
                raise ValueError("the embedding of the query is empty or zero")
            docs = self._docs
            index = self._vector_index(docs, len(unit))
            if index.missing:
                # Another model answered under the same name: its vectors must be rebuilt.
                log.warning(
                    "%d knowledge vectors have another dimension; re-embedding", index.missing
                )
                scores = index.scores(unit)
                await self._embed_and_store(
                    [doc for doc, score in zip(docs, scores, strict=True) if score is None]
                )
                docs = self._docs
                index = self._vector_index(docs, len(unit))
            mask = await self._vector_mask(space, docs, index)
            best = await off_loop_if(
                index.size * index.dims > VECTOR_OFF_LOOP, index.top, unit, mask, top_k
            )
        except Exception as exc:  # any backend failure means: rank lexically instead
            self._embedding_failed(exc)
            return None
        self._embedding_ok()
        return [
            KBHit(docs[i].path, docs[i].title, docs[i].content, round(score, 4), "embedding")
            for i, score in best
            if score >= min_score
        ]

    async def _embed_stale(self, key: str) -> None:
        """Embed the documents without a vector of model `key` (checked once per set)."""
        docs = self._docs
        if self._embedded is not None and self._embedded[0] is docs and self._embedded[1] == key:
            return
        stale = [doc for doc in docs if doc.unit is None or doc.model != key]
        if stale:
            await self._embed_and_store(stale)
        if self._docs is docs:
            self._embedded = (docs, key)

    def _vector_index(self, docs: list[_Doc], dims: int) -> VectorIndex:
        index = self._vectors
        if index is None or index.source is not docs or index.dims != dims:
            index = self._vectors = VectorIndex(docs, [doc.unit for doc in docs], dims)
            self._vector_masks = {}
        return index

    async def _vector_mask(self, space: str, docs: list[_Doc], index: VectorIndex) -> Any:
        mask = self._vector_masks.get(space)
        if mask is None:
            mask = index.mask(await self._visible_to(space, docs))
            if index is self._vectors:
                self._vector_masks[space] = mask
        return mask

    async def _embed_and_store(self, docs: Sequence[_Doc]) -> None:
        async with self._lock:
            # A sync may have replaced these documents while this waited for the lock.
            current = {id(doc) for doc in self._docs}
            docs = [doc for doc in docs if id(doc) in current]
            if docs:
                await self._embed_docs(docs)
                await self._repo.apply([doc.row() for doc in docs], [])

    async def _index(self, docs: list[_Doc]) -> BM25Index:
        if self._bm25 is not None and docs is self._docs:
            return self._bm25
        texts = [f"{doc.title}\n{doc.content[:BM25_MAX_CHARS]}" for doc in docs]
        index = await asyncio.to_thread(lambda: BM25Index([bigram_terms(text) for text in texts]))
        if docs is self._docs:
            self._bm25 = index
        return index

    async def _search_bm25(
        self, query: str, docs: list[_Doc], visible: Sequence[bool], top_k: int
    ) -> list[KBHit]:
        index = await self._index(docs)
        nouns = await self._analyzer.nouns_async(query)
        terms = bigram_terms(" ".join(nouns))
        weight = index.query_weight(terms)
        if not terms or weight <= 0:
            return []
        matches = await off_loop_if(len(index) > BM25_OFF_LOOP_DOCS, index.matches, terms)
        seen = [(i, score) for i, score in matches.items() if visible[i] and score > 0]
        if not seen:
            return []
        best = max(score for _, score in seen)
        ranked = sorted(seen, key=lambda item: (-item[1], item[0]))
        return [
            KBHit(docs[i].path, docs[i].title, docs[i].content, round(score / weight, 4), "bm25")
            for i, score in ranked[:top_k]
            if score / weight >= BM25_MIN_SHARE and score >= BM25_RELATIVE * best
        ]


def _scan_changes(
    kb_dir: Path, previous: Snapshot | None, problems: dict[str, str]
) -> tuple[Snapshot, bool]:
    """The stat snapshot of kb_dir and whether it differs from `previous` (compared here, in
    the worker thread: a snapshot of many files is slow to compare)."""
    snapshot = scan_dir(kb_dir, problems)
    return snapshot, snapshot != previous
