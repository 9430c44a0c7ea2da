"""The generated conversations of bench/recall.py: speakers, filler, planted evidence, questions.

Deterministic (one seeded `random.Random`): four members talk in many sessions over a year, in
English and Japanese; filler reuses the evidence's vocabulary (other cats, other cities, other
moves) so that a word alone does not find the answer. Each `Probe` plants one evidence message
(said by `speaker`, in the session of `month` when given) and asks a paraphrased question.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

SPEAKERS: Final = ("Aiko", "Ben", "Carla", "Daichi")
START: Final = datetime(2025, 4, 1, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Probe:
    """One planted evidence message and the question whose answer it holds."""

    speaker: str
    evidence: str
    question: str
    month: str | None = None  # "2025-11": planted in a session of that month


PROBES: Final[tuple[Probe, ...]] = (
    Probe("Aiko", "My cat is called Mochi-Kinako, she is a calico", "What is Aiko's cat's name?"),
    Probe("Ben", "I moved to Sapporo last spring and the snow is unreal", "Where did Ben move to?"),
    Probe("Daichi", "来月から東京の本社に転勤することになった", "Daichiの転勤先は？"),
    Probe(
        "Carla",
        "We finally adopted a rescue greyhound, his name is Biscuit",
        "Which dog is Carla adopting?",
    ),
    Probe(
        "Aiko",
        "My sister's wedding is in Kyoto on the fourteenth of October",
        "When does Aiko's sister get married?",
    ),
    Probe(
        "Ben",
        "I'm training for the Osaka marathon, running 60 km a week",
        "Which race is Ben preparing for?",
    ),
    Probe("Daichi", "妻の誕生日にカメラをプレゼントした", "Daichiは奥さんの誕生日に何をあげた？"),
    Probe(
        "Carla",
        "I'm allergic to peanuts, so no satay for me please",
        "What food allergy does Carla have?",
        "2025-07",
    ),
    Probe(
        "Aiko",
        "I started learning the cello in January, lessons every Tuesday",
        "Which instrument is Aiko learning?",
    ),
    Probe(
        "Ben", "My laptop died so I bought a ThinkPad X1 yesterday", "What computer did Ben buy?"
    ),
    Probe("Daichi", "趣味は釣りで、毎週末に海へ行っています", "Daichiの趣味は何？"),
    Probe(
        "Carla", "The band I play in is called Velvet Lanterns", "What is the name of Carla's band?"
    ),
    Probe("Aiko", "I passed the JLPT N1 exam, so happy", "Which exam did Aiko pass?", "2025-12"),
    Probe("Ben", "My daughter Hana turns five next week", "How old is Ben's daughter turning?"),
    Probe("Daichi", "京都の大学で化学を教えています", "Daichiは何を教えている？"),
    Probe(
        "Carla",
        "I'm flying to Lisbon for a conference in May",
        "Where is Carla travelling for the conference?",
    ),
    Probe(
        "Aiko",
        "Our team switched the backend from Django to FastAPI",
        "Which framework did Aiko's team migrate to?",
    ),
    Probe("Ben", "I'm vegetarian since 2019, no meat at all", "Does Ben eat meat?"),
    Probe("Daichi", "北海道で生まれて、十八歳まで住んでいた", "Daichiの出身地はどこ？"),
    Probe("Carla", "My grandmother taught me to bake sourdough bread", "Who taught Carla baking?"),
    Probe(
        "Aiko",
        "The password manager we chose is Bitwarden",
        "Which password manager was picked?",
        "2026-02",
    ),
    Probe("Ben", "I broke my wrist skateboarding, cast for six weeks", "How did Ben get injured?"),
    Probe("Daichi", "毎朝コーヒーを三杯飲む", "Daichiはコーヒーを一日何杯飲む？"),
    Probe("Carla", "I'm reading Dune for the third time", "Which novel is Carla rereading?"),
    Probe(
        "Aiko",
        "We are renovating the kitchen, new tiles arrive Friday",
        "What room is Aiko renovating?",
    ),
    Probe(
        "Ben",
        "Our server migration is planned for the weekend of the 21st",
        "When is the server migration scheduled?",
        "2026-03",
    ),
    Probe("Daichi", "大阪で美味しいたこ焼き屋を見つけた", "Daichiが大阪で見つけた店は？"),
    Probe(
        "Carla",
        "My favourite board game is Terraforming Mars",
        "What board game does Carla like most?",
    ),
    Probe(
        "Aiko", "I'm moving to Fukuoka in spring for the new job", "Where does Aiko plan to move?"
    ),
    Probe(
        "Ben",
        "I named my sourdough starter Clint Yeastwood",
        "What did Ben call his sourdough starter?",
    ),
)

_EN_FILLER: Final = (
    "did anyone watch the game last night?",
    "lol that's so true",
    "my cat knocked over a plant again",
    "the snow in the mountains looks great this year",
    "I need more coffee before this meeting",
    "anyone up for karaoke on the weekend?",
    "the train was late again today",
    "we should plan a trip to Kyoto sometime",
    "my neighbour is moving out next month",
    "the new ramen place near the station is good",
    "I think the update broke something on my laptop",
    "has anyone tried the new board game cafe?",
    "work is busy, talk later",
    "the weather is so nice today",
    "my dog loves the park near our flat",
    "I'm thinking about learning guitar",
    "this week has been so long",
    "we had a team dinner, the food was amazing",
    "did you see the conference talk videos?",
    "I can't decide what to cook tonight",
    "the marathon on TV was fun to watch",
    "anyone know a good book to read?",
    "my sister sent me photos from her trip",
    "haha same here",
    "the server was slow this morning",
    "I baked cookies but they burned a bit",
    "good night everyone",
    "what time is the meeting tomorrow?",
    "I love the autumn leaves here",
    "the exam season is stressful for everyone",
)

_JA_FILLER: Final = (
    "今日は暑いね",
    "昨日のドラマ見た？",
    "週末どこか行く？",
    "猫がかわいすぎる",
    "東京は人が多いね",
    "ラーメン食べたい",
    "仕事が忙しい",
    "おはようございます",
    "コーヒー飲みすぎた",
    "雨が降ってきた",
    "新しいカメラ欲しいなあ",
    "大阪に旅行したい",
    "誕生日おめでとう！",
    "今週は長かった",
    "電車が遅れてる",
    "おやすみなさい",
    "京都の紅葉がきれい",
    "釣りに行ってみたい",
    "ゲームしてた",
    "引っ越しの準備が大変",
)

_TOPICS: Final = ("coffee", "cats", "travel", "music", "work", "food", "games", "books")


@dataclass(frozen=True)
class Line:
    """One message of a generated session."""

    speaker: str
    content: str
    at: str
    probe: int | None = None  # index into PROBES when this is a planted evidence message


@dataclass(frozen=True)
class Session:
    """One generated session: its title, its lines in order."""

    id: str
    title: str
    lines: tuple[Line, ...]


def filler(rng: random.Random) -> str:
    """One line of chatter (English two times in three)."""
    if rng.random() < 0.66:
        return rng.choice(_EN_FILLER)
    return rng.choice(_JA_FILLER)


def _session_days(count: int) -> list[datetime]:
    """`count` session start times spread over a year from START."""
    step = timedelta(days=365 / count)
    return [START + step * n for n in range(count)]


def _probe_sessions(rng: random.Random, days: list[datetime]) -> dict[int, list[int]]:
    """Session index → the probes planted in it (a probe's month picks a session in it)."""
    placed: dict[int, list[int]] = {}
    for index, probe in enumerate(PROBES):
        candidates = [
            n
            for n, day in enumerate(days)
            if probe.month is None or day.strftime("%Y-%m") == probe.month
        ]
        # Most evidence is old: the last sixth of the year is filler only (beyond a recent window).
        older = [n for n in candidates if n < len(days) * 5 // 6] or candidates
        placed.setdefault(rng.choice(older), []).append(index)
    return placed


def conversations(sessions: int = 60, lines: int = 60, seed: int = 28) -> list[Session]:
    """The generated sessions, oldest first, with every probe planted once."""
    rng = random.Random(seed)
    days = _session_days(sessions)
    placed = _probe_sessions(rng, days)
    result: list[Session] = []
    for n, day in enumerate(days):
        here = placed.get(n, [])
        plant = dict(zip(rng.sample(range(lines), len(here)), here, strict=True))
        out: list[Line] = []
        for k in range(lines):
            at = (day + timedelta(minutes=2 * k)).isoformat()
            if k in plant:
                probe = PROBES[plant[k]]
                out.append(Line(probe.speaker, probe.evidence, at, plant[k]))
            else:
                out.append(Line(rng.choice(SPEAKERS), filler(rng), at))
        title = f"{rng.choice(_TOPICS)} chat {day:%Y-%m-%d}"
        result.append(Session(f"bench-{n:04d}", title, tuple(out)))
    return result
