"""Recall on a held-out public set: LoCoMo's long two-speaker conversations (issue 28).

LoCoMo (snap-research/locomo, CC BY-NC 4.0; not in this repository, point this bench at your
copy): ten conversations of 19–32 sessions and 369–689 messages, each with questions whose
evidence messages are annotated (`"D3:7"`: session 3, message 7).

Each conversation is imported through the store's session import into a space of its own
(`local:locomo-<name>`), one imported session per LoCoMo session, the speakers' names as author
names and the session's date (`1:56 pm on 8 May, 2023`) as the timestamp of its messages
(one minute apart); the background recall index is filled as the bot fills it. Every question
then goes through the product's ranking (`RecallRepository.ranked`, what the `recall` tool
pages through) and we count the evidence messages found in the top 5 / top 10.

Questions: categories 1–4 (single-hop, multi-hop, temporal, open-domain). Category 5
(adversarial: the question's premise is false, its "evidence" is what contradicts it) is
left out of the headline figure and reported apart. Evidence ids are read leniently
(`D:11:26`, `D30:05`, several ids in one string); ids naming no message are dropped and
counted.

Baseline: plain Okapi BM25 (k1 1.2, b 0.75, lower-cased \\w+ tokens, no stemming, no stop
words) over the same messages of the conversation, the question as the query.

Tuning hygiene: `--conversations 26,30` restricts the run (the tuning subset); the summary
line also gives the figure over the other conversations alone (`held_out`).

Run: .venv/bin/python bench/recall_heldout.py [DIR] [--conversations 26,30] [--database URL]
     (DIR or $LOCOMO_DIR: the folder of LoCoMo's per-conversation JSON files, e.g.
     locomo10_v2/{26,30,…}.json, or one locomo10.json holding a list of them; --database:
     an empty database's URL, e.g. on PostgreSQL, instead of a temporary SQLite file.)
Prints one JSON object, then a one-line summary. Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.recall_bm25 import bm25_top
from bench.recall_index import fill_index
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.transfer import ExportedMessage, ExportedSession, SessionExport, SessionTransfer

TUNING: tuple[str, ...] = ("26", "30")
CATEGORIES = frozenset({1, 2, 3, 4})
ADVERSARIAL = 5
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_SESSION = re.compile(r"session_(\d+)")


def load(directory: Path) -> dict[str, dict[str, Any]]:
    """The conversations of `directory` by name (file stem, or sample_id in a list file)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data if isinstance(data, list) else [data]
        for n, item in enumerate(items):
            if isinstance(item, dict) and "qa" in item:
                name = path.stem if len(items) == 1 else str(item.get("sample_id", n))
                convo = item.get("conversation", item)
                found[name] = {**convo, "qa": item["qa"]}
    return found


def parse_date(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` → a UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def evidence_ids(raw: list[Any]) -> list[str]:
    """`["D8:6; D9:17", "D:11:26", "D30:05"]` → `["D8:6", "D9:17", "D11:26", "D30:5"]`."""
    ids = [f"D{int(s)}:{int(m)}" for item in raw for s, m in _EVIDENCE.findall(str(item))]
    return list(dict.fromkeys(ids))


def sessions(convo: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    """(number, date, turns) of each non-empty session, in order."""
    out = []
    for key, turns in convo.items():
        found = _SESSION.fullmatch(key)
        if found and isinstance(turns, list) and turns:
            number = int(found.group(1))
            out.append((number, parse_date(convo[f"session_{number}_date_time"]), turns))
    return sorted(out, key=lambda item: item[0])


def _export(name: str, number: int, at: datetime, turns: list[dict[str, Any]]) -> SessionExport:
    stamps = [(at + timedelta(minutes=n)).isoformat() for n in range(len(turns))]
    return SessionExport(
        exported_at=stamps[-1],
        session=ExportedSession(
            id=f"locomo-{name}-{number}",
            title=f"session {number}",
            created_at=stamps[0],
            updated_at=stamps[-1],
        ),
        messages=[
            ExportedMessage(
                id=n + 1,
                role="user",
                content=str(turn["text"]),
                author_id=str(turn["speaker"]).lower(),
                author_name=str(turn["speaker"]),
                created_at=stamps[n],
            )
            for n, turn in enumerate(turns)
        ],
    )


async def import_conversation(
    db: Database, repos: Repositories, name: str, convo: dict[str, Any]
) -> dict[int, str]:
    """Import one conversation into space `local:locomo-<name>`; returns message id → dia_id."""
    transfer = SessionTransfer(
        db, repos.sessions, repos.messages, repos.memories, repos.attachments
    )
    space = f"local:locomo-{name}"
    ids: dict[int, str] = {}
    for number, at, turns in sessions(convo):
        session = await transfer.import_session(space, _export(name, number, at, turns))
        rows = await db.fetchall(
            "SELECT id FROM messages WHERE space_id = ? AND session_id = ? ORDER BY id",
            (space, session),
        )
        for row, turn in zip(rows, turns, strict=True):
            ids[int(row["id"])] = str(turn["dia_id"])
    return ids


def _score(tops: list[tuple[list[str], list[str]]]) -> dict[str, Any]:
    """Evidence found in the top 5 / 10 (of all evidence), and questions with any found."""
    total = sum(len(evidence) for evidence, _ in tops) or 1
    at5 = sum(len(set(evidence) & set(top[:5])) for evidence, top in tops)
    at10 = sum(len(set(evidence) & set(top[:10])) for evidence, top in tops)
    any10 = sum(1 for evidence, top in tops if set(evidence) & set(top[:10]))
    return {
        "questions": len(tops),
        "evidence": sum(len(evidence) for evidence, _ in tops),
        "recall_at_5": round(at5 / total, 3),
        "recall_at_10": round(at10 / total, 3),
        "questions_hit_at_10": round(any10 / (len(tops) or 1), 3),
    }


async def evaluate(path: Path | str, convos: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Rankings of the product and of BM25 for every question, scored per conversation (in a
    SQLite file at `path`, or in the empty database at the URL `path`)."""
    db = await (Database.connect(path) if isinstance(path, str) else Database.open(path))
    per: dict[str, Any] = {}
    dropped = 0
    try:
        repos = Repositories.over(db)
        maps = {name: await import_conversation(db, repos, name, c) for name, c in convos.items()}
        index_s = await fill_index(db, repos)
        for name, convo in convos.items():
            dia = maps[name]
            texts = {str(t["dia_id"]): str(t["text"]) for _, _, ts in sessions(convo) for t in ts}
            rows: list[tuple[int, list[str], list[str], list[str]]] = []
            for qa in convo["qa"]:
                evidence = evidence_ids(qa.get("evidence") or [])
                kept = [e for e in evidence if e in texts]
                dropped += len(evidence) - len(kept)
                if not kept:
                    continue
                question = str(qa["question"])
                ranked = await repos.recall.ranked(f"local:locomo-{name}", question, limit=10)
                ours = [dia[hit.id] for hit in ranked.hits if hit.kind == "message"]
                rows.append((int(qa["category"]), kept, ours, bm25_top(texts, question, 10)))
            per[name] = rows
    finally:
        await db.close()
    return {"per": per, "dropped_evidence_ids": dropped, "index_fill_s": index_s}


def summarise(per: dict[str, Any], names: list[str], adversarial: bool = False) -> dict[str, Any]:
    """Product and BM25 scores over the questions of `names`."""
    rows = [row for name in names for row in per[name] if (row[0] == ADVERSARIAL) == adversarial]
    return {
        "recall": _score([(r[1], r[2]) for r in rows]),
        "bm25": _score([(r[1], r[3]) for r in rows]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", default=os.environ.get("LOCOMO_DIR"))
    parser.add_argument("--conversations", default="", help="only these, e.g. 26,30")
    parser.add_argument(
        "--database", default="", help="an empty database's URL instead (e.g. postgresql://…)"
    )
    args = parser.parse_args()
    if not args.directory or not Path(args.directory).is_dir():
        sys.exit(
            "recall_heldout: give LoCoMo's folder of conversation JSON files as an argument "
            "or in $LOCOMO_DIR (snap-research/locomo, data/…; not shipped here: CC BY-NC 4.0)."
        )
    convos = load(Path(args.directory))
    wanted = [name for name in args.conversations.split(",") if name]
    if wanted:
        convos = {name: convos[name] for name in wanted if name in convos}
    if not convos:
        sys.exit(f"recall_heldout: no LoCoMo conversation found in {args.directory}")
    with tempfile.TemporaryDirectory() as tmp:
        result = asyncio.run(evaluate(args.database or Path(tmp) / "locomo.db", convos))
    names = sorted(convos)
    held = [name for name in names if name not in TUNING]
    report = {
        "conversations": names,
        "messages": sum(len(t) for c in convos.values() for _, _, t in sessions(c)),
        "dropped_evidence_ids": result["dropped_evidence_ids"],
        "index_fill_s": result["index_fill_s"],
        "all": summarise(result["per"], names),
        "held_out": summarise(result["per"], held) if held else None,
        "tuning": summarise(result["per"], [n for n in names if n in TUNING]),
        "adversarial": summarise(result["per"], names, adversarial=True),
        "per_conversation": {n: summarise(result["per"], [n])["recall"] for n in names},
    }
    print(json.dumps(report, ensure_ascii=False))
    a = report["all"]
    h = report["held_out"]
    held_text = (
        f"; held out ({len(held)} conv.) R@10 {h['recall']['recall_at_10']} vs BM25 "
        f"{h['bm25']['recall_at_10']}"
        if h
        else ""
    )
    print(
        f"recall_heldout: {len(names)} conversations, {report['messages']} messages, "
        f"{a['recall']['questions']} questions (cat. 1-4), {a['recall']['evidence']} evidence: "
        f"R@5 {a['recall']['recall_at_5']} / R@10 {a['recall']['recall_at_10']}, "
        f"BM25 R@5 {a['bm25']['recall_at_5']} / R@10 {a['bm25']['recall_at_10']}{held_text}"
    )


if __name__ == "__main__":
    main()
