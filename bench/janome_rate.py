"""Janome noun extraction rate over realistic Japanese chat lines.

Run: .venv/bin/python bench/janome_rate.py [--lines 600] [--rounds 5]
Prints one JSON object, then a one-line summary.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.memory.japanese import InProcessAnalyzer

TOPICS = [
    "ラーメン",
    "カメラ",
    "沖縄旅行",
    "機械学習",
    "Python",
    "猫",
    "映画",
    "新しいゲーム",
    "週末の天気",
    "Discord",
    "株価",
    "ダイエット",
    "コーヒー",
    "引っ越し",
    "アニメ",
    "筋トレ",
    "Kubernetes",
    "プログラミング",
    "花見",
    "温泉",
    "読書",
    "キャンプ",
    "円安",
    "ChatGPT",
]
TEMPLATES = [
    "昨日{a}の話をしてたんだけど、{b}ってどう思う？",
    "{a}について教えて！初心者でも大丈夫かな",
    "最近{a}にハマってて、毎日{b}のことばかり考えてる笑",
    "それな〜 {a}はマジで良いよね。{b}もおすすめ",
    "<@123456789> {a}の件、あとで確認しておきます",
    "{a}と{b}、どっちがいいと思う？理由も知りたい",
    "今日は{a}に行ってきた。写真はこちら https://example.com/p/{n}",
    "え、{a}って{b}と関係あるの？知らなかった",
    "```python\nprint('{a}')\n``` このコードで{b}が動かないんだけど",
    "おはよう！今日も{a}頑張ろう 😀",
    "{a}の値段が上がってて困る…{b}で節約しないと",
    "週末は{a}か{b}の予定。雨だったら家で映画かな",
]


def chat_lines(count: int, seed: int = 42) -> list[str]:
    """`count` varied chat lines from templates and topics, reproducible by `seed`."""
    rng = random.Random(seed)
    lines = []
    for n in range(count):
        a, b = rng.sample(TOPICS, 2)
        lines.append(rng.choice(TEMPLATES).format(a=a, b=b, n=n))
    return lines


def rss_mib() -> float:
    """Resident set size of this process in MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    """Measure load time, memory and messages per second; print JSON and a summary."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    lines = chat_lines(args.lines)
    analyzer = InProcessAnalyzer()
    rss_before = rss_mib()
    start = time.perf_counter()
    analyzer.nouns("準備")  # loads the Tokenizer (import + dictionary)
    load_ms = (time.perf_counter() - start) * 1000
    rss_after_load = rss_mib()

    rates = []
    nouns_total = 0
    for _ in range(args.rounds):
        start = time.perf_counter()
        nouns_total = sum(len(analyzer.nouns(line)) for line in lines)
        rates.append(len(lines) / (time.perf_counter() - start))
    rss_end = rss_mib()
    analyzer.close()

    result = {
        "bench": "janome_rate",
        "lines": len(lines),
        "avg_chars": round(sum(map(len, lines)) / len(lines), 1),
        "rounds": args.rounds,
        "msgs_per_s_median": round(statistics.median(rates)),
        "msgs_per_s_min": round(min(rates)),
        "msgs_per_s_max": round(max(rates)),
        "nouns_per_msg": round(nouns_total / len(lines), 2),
        "tokenizer_load_ms": round(load_ms, 1),
        "rss_load_delta_mib": round(rss_after_load - rss_before, 1),
        "rss_total_delta_mib": round(rss_end - rss_before, 1),
        "sample": {"line": lines[0], "nouns": analyzer.nouns(lines[0])},
    }
    print(json.dumps(result, ensure_ascii=False))
    print(
        f"janome: {result['msgs_per_s_median']} msg/s median "
        f"({result['msgs_per_s_min']}-{result['msgs_per_s_max']}), "
        f"Tokenizer load {result['tokenizer_load_ms']} ms, "
        f"+{result['rss_total_delta_mib']} MiB RSS"
    )


if __name__ == "__main__":
    main()
