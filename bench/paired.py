"""Paired, interleaved A/B of a benchmark over two source trees: medians and paired differences.

Each pair runs the same bench script once in tree A and once in tree B, A first in the first
pair, B first in the next and so on, so a drift of the machine's load falls on both sides
alike. Each run is `PYTHON TREE/SCRIPT ARGS` with TREE as its working directory and first on
PYTHONPATH (one venv serves both trees); its JSON line is kept in `--out`. For each metric it
reports both medians, the paired differences (B - A), their median (also as % of A's median),
how many pairs agree in sign, and the spread of the differences (their median absolute
deviation). A difference is called outside the noise when at least three pairs in four agree
in sign and the median difference is larger than that spread.

Run: .venv/bin/python bench/paired.py --a TREE --b TREE [--pairs 8] [--out DIR]
     [--metric cpu_ms_per_reply ...] -- bench/discord_turn.py --turns 20 --threads 0
Prints one JSON object, then a one-line summary per metric.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

DEFAULT_METRICS = ("cpu_ms_per_reply", "cold_first_reply_ms", "startup_to_ready_s")


def run_once(python: str, tree: Path, script: list[str]) -> dict[str, Any]:
    """One run of the bench in `tree`; its JSON object."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [python, *script], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{tree}: exit {done.returncode}\n{done.stderr[-3000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("{"))
    result: dict[str, Any] = json.loads(line)
    return result


def sign_test_p(agree: int, total: int) -> float:
    """Two-sided exact sign-test p-value for `agree` of `total` pairs on one side."""
    if total == 0:
        return 1.0
    tail = min(agree, total - agree)
    p = sum(math.comb(total, k) for k in range(tail + 1)) / 2**total
    return min(1.0, 2 * p)


def compare(a: list[float], b: list[float]) -> dict[str, Any]:
    """Medians of both sides and the paired differences (B - A) with their noise verdict."""
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    median_a, median_diff = statistics.median(a), statistics.median(diffs)
    spread = statistics.median(abs(d - median_diff) for d in diffs)
    side = [d for d in diffs if d != 0 and (d > 0) == (median_diff > 0)]
    agree = len(side) if median_diff != 0 else 0
    return {
        "a": a,
        "b": b,
        "diffs": [round(d, 3) for d in diffs],
        "median_a": round(median_a, 3),
        "median_b": round(statistics.median(b), 3),
        "median_diff": round(median_diff, 3),
        "median_diff_pct": round(100 * median_diff / median_a, 1) if median_a else None,
        "pairs_agreeing": agree,
        "pairs": len(diffs),
        "spread_mad": round(spread, 3),
        "sign_test_p": round(sign_test_p(agree, len(diffs)), 4),
        "outside_noise": agree * 4 >= 3 * len(diffs) and abs(median_diff) > spread,
    }


def main() -> None:
    """Run the pairs, keep each run's JSON, print the comparison."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--a", type=Path, required=True, help="tree A (e.g. the trick on)")
    parser.add_argument("--b", type=Path, required=True, help="tree B (e.g. the trick off)")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--out", type=Path, help="folder for each run's JSON")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--metric", action="append", help="JSON field to compare (repeatable)")
    parser.add_argument("script", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS]")
    args = parser.parse_args()
    script = args.script[1:] if args.script[:1] == ["--"] else args.script
    metrics = args.metric or list(DEFAULT_METRICS)
    runs: dict[str, list[dict[str, Any]]] = {"a": [], "b": []}
    for pair in range(args.pairs):
        for side in ("a", "b") if pair % 2 == 0 else ("b", "a"):
            result = run_once(args.python, getattr(args, side).resolve(), script)
            runs[side].append(result)
            if args.out is not None:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / f"pair{pair + 1:02d}-{side}.json").write_text(json.dumps(result))
    report = {
        "a": str(args.a),
        "b": str(args.b),
        "script": script,
        "metrics": {
            name: compare([r[name] for r in runs["a"]], [r[name] for r in runs["b"]])
            for name in metrics
        },
    }
    print(json.dumps(report))
    for name, figures in report["metrics"].items():
        print(
            f"{name}: A {figures['median_a']} / B {figures['median_b']}, paired diff "
            f"{figures['median_diff']} ({figures['median_diff_pct']} %), "
            f"{figures['pairs_agreeing']}/{figures['pairs']} pairs agree, spread "
            f"{figures['spread_mad']}: {'outside' if figures['outside_noise'] else 'inside'} "
            "the noise"
        )


if __name__ == "__main__":
    main()
