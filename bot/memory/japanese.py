"""Content nouns of Japanese (and English) text with one shared Janome Tokenizer."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from bot.memory.analysis_worker import AnalyzerProcess, serve
from bot.text.scripts import HAN_IDEOGRAPHS

log = logging.getLogger(__name__)

# Longer inputs are cut: Janome runs at roughly 45,000 characters per second, and chat messages
# and summaries are far shorter than this.
MAX_CHARS = 20_000

# A compound (機械+学習, 円+安, ラーメン+屋) is joined when it has at most this many parts and
# characters; longer runs (東京+駅前+ラーメン+屋) are odd topics, so their parts stand alone.
_MAX_COMPOUND_PARTS = 3
_MAX_COMPOUND_CHARS = 10
_MAX_ASCII_CHARS = 30

# Second field of Janome's part_of_speech for nouns that carry a topic: general and proper
# nouns, and verbal nouns (旅行, 勉強) while they are not used as a verb (勉強する).
_CONTENT_NOUNS = frozenset({"一般", "固有名詞", "サ変接続"})
_VERBAL_NOUN = "サ変接続"

JA_STOP_WORDS = frozenset(
    """
    人 時 事 気 方 物 者 話 件 点 例 感 的 他 今 前 後 上 下 中 外 内 間 側 際 草 笑 何 私 僕 俺
    こと もの ため よう ところ とき それ これ あれ どれ ほんと ほか いろいろ みんな
    自分 皆さん 本当 感じ 意味 普通 全部 一部 色々 大体 結構 全然 最初 最後 以上 以下
    今回 前回 次回 場合 程度 部分 内容 情報 方法 話題 質問 回答 答え 説明 お願い 確認 返信
    感想 理由 状態 結果 関係 相手 一緒 自体 是非 予定 気持ち 大事 問題 今度 あと
    """.split()
)

EN_STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each etc even ever few for from further get gets got had hadn has hasn have
    haven having he her here hers herself him himself his how however i if in into is isn it its
    itself just let like lol lot lots may me might more most much must my myself no nor not now
    of off oh ok okay on once only or other ought our ours ourselves out over own please really
    same shall she should shouldn so some still such than thank thanks that the their theirs them
    themselves then there these they thing things this those though through to too under until
    up us very was wasn way we well were weren what when where which while who whom why will
    with won would wouldn yeah yes yet you your yours yourself yourselves www http https com
    """.split()
)

# Janome tags every Latin word as a proper noun, so English verbs are told apart by form: a
# common verb, or one of its -s/-ed/-ing forms (run → runs, running; make → making).
EN_VERBS = frozenset(
    """
    ask bake believe bring build buy call change check choose clean close come cook cry cut
    dance decide die do drink drive eat enjoy fall feel fight find finish fly follow forget
    get give go grow happen hate hear help hold hope hurt join jump keep kill know laugh learn
    leave lie like listen live look lose love make mean meet miss move need open pay play put
    read remember rest ride ring rise run say see seem sell send set show sing sit sleep speak
    spend stand start stay stop study swim take talk teach tell think throw travel try turn
    understand use visit wait wake walk want wash watch wear win wish wonder work worry write
    """.split()
)
EN_IRREGULAR_VERBS = frozenset(
    """
    ate began begun bought brought built came caught chose chosen did done drank drove driven
    eaten fell felt flew forgot found gave given gone got gotten grew grown had heard held hurt
    kept knew known laid led left lost made meant met paid ran rang rode rose said sang sat saw
    seen sent slept sold spent spoke spoken stood swam taught thought threw told took taken
    understood was went were woke won wore worn wrote written
    """.split()
)
# Common adjectives and adverbs, which carry no topic of their own.
EN_MODIFIERS = frozenset(
    """
    bad best better big cool easy fine fun funny good great happy hard huge long new nice old
    sad small sure today tomorrow tonight yesterday always never often sometimes maybe
    """.split()
)

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)
_DISCORD_MARKUP = re.compile(r"<(?:@[!&]?\d+|#\d+|a?:\w+:\d+|t:\d+(?::\w)?)>")
_SHORTCODE = re.compile(r":[a-z0-9_+\-]+:")
_ASCII_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#.\-]*")
_KANJI = re.compile(f"[{HAN_IDEOGRAPHS}]")


def clean_text(text: str) -> str:
    """NFKC-normalised text without code, URLs, Discord markup and emoji shortcodes."""
    text = unicodedata.normalize("NFKC", text)
    for pattern in (_FENCE, _INLINE_CODE, _URL, _DISCORD_MARKUP, _SHORTCODE):
        text = pattern.sub(" ", text)
    return text


def _is_ascii_word(surface: str) -> bool:
    return surface.isascii() and _ASCII_WORD.fullmatch(surface) is not None


def _verb_stems(word: str) -> list[str]:
    """The base forms `word` may be an inflection of (running → runn, run, rune)."""
    stems = [word]
    for ending in ("ing", "ed", "es", "s", "d"):
        if word.endswith(ending) and len(word) > len(ending) + 1:
            stem = word[: -len(ending)]
            stems += [stem, stem + "e"]
            if len(stem) > 2 and stem[-1] == stem[-2]:
                stems.append(stem[:-1])  # running → run, stopped → stop
            if stem.endswith("i"):
                stems.append(stem[:-1] + "y")  # studies → study
    return stems


def is_english_verb(word: str) -> bool:
    """Whether a Latin word is a common English verb or one of its inflections."""
    lower = word.lower()
    if lower in EN_IRREGULAR_VERBS:
        return True
    return any(stem in EN_VERBS for stem in _verb_stems(lower))


def _keep_ascii(surface: str) -> bool:
    if len(surface) > _MAX_ASCII_CHARS or surface.lower() in EN_STOP_WORDS:
        return False
    if surface.lower() in EN_MODIFIERS or (not surface.isupper() and is_english_verb(surface)):
        return False
    return len(surface) >= 3 or (len(surface) == 2 and surface.isupper())


def _keep_japanese(word: str) -> bool:
    if word in JA_STOP_WORDS:
        return False
    return len(word) >= 2 or _KANJI.fullmatch(word) is not None


def _flush(run: list[str], out: list[str], *, verb: bool = False) -> None:
    if verb:  # the run is a verb's stem (勉強+する): a verb is no topic
        run.clear()
    if not run:
        return
    joined = "".join(run)
    if len(run) <= _MAX_COMPOUND_PARTS and len(joined) <= _MAX_COMPOUND_CHARS:
        if _keep_japanese(joined):
            out.append(joined)
    else:
        out.extend(part for part in run if _keep_japanese(part))
    run.clear()


def _is_suru(token: Any, pos: list[str]) -> bool:
    return pos[0] == "動詞" and getattr(token, "base_form", "") == "する"


def extract_nouns(tokens: Iterable[Any]) -> list[str]:
    """Content nouns from Janome tokens, joining short compounds; verbs, adjectives, particles,
    numbers, pronouns, dependent nouns and stop words dropped."""
    out: list[str] = []
    run: list[str] = []
    verbal = False  # whether the run ends in a verbal noun (勉強), a verb if する follows
    for token in tokens:
        surface: str = token.surface
        pos: list[str] = token.part_of_speech.split(",")
        if pos[0] != "名詞":
            _flush(run, out, verb=verbal and _is_suru(token, pos))
            continue
        if _is_ascii_word(surface):
            _flush(run, out)
            if _keep_ascii(surface):
                out.append(surface)
            continue
        if not surface.isalnum():
            _flush(run, out)
            continue
        verbal = pos[1] == _VERBAL_NOUN
        if pos[1] in _CONTENT_NOUNS:
            run.append(surface)
        elif pos[1] == "接尾" and pos[2] == "一般" and run:
            # A suffix belongs to the noun before it (円+安, ラーメン+屋).
            run[-1] += surface
        else:
            _flush(run, out)
    _flush(run, out)
    return out


class NounExtractor(Protocol):
    """What the word pool and the tagger need from an analyzer (JapaneseAnalyzer fits)."""

    async def nouns_async(self, text: str) -> list[str]:
        """Nouns of one text."""
        ...

    async def nouns_many(self, texts: Sequence[str]) -> list[list[str]]:
        """Nouns of each text."""
        ...


class InProcessAnalyzer:
    """Noun extraction over one lazily loaded Janome Tokenizer, serialised on one thread.

    The analysis worker process runs this; the bot uses `JapaneseAnalyzer` (the worker's
    client), so the dictionary and the tokenising stay out of its process.

    Janome's Tokenizer is not safe to share between threads (its matcher cache is checked
    outside its lock), so every use goes through `_lock`, and the async methods run on a
    dedicated single-thread executor: the event loop never tokenises, and calls queue in order.
    """

    def __init__(self, *, max_chars: int = MAX_CHARS) -> None:
        self._max_chars = max_chars
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def _get_tokenizer(self) -> Any:
        if self._tokenizer is None:
            from janome.tokenizer import Tokenizer

            self._tokenizer = Tokenizer()
            log.debug("janome tokenizer loaded")
        return self._tokenizer

    def nouns(self, text: str) -> list[str]:
        """Content nouns of `text` in order of appearance (duplicates kept); blocking."""
        cleaned = clean_text(text[: self._max_chars]).strip()
        if not cleaned:
            return []
        with self._lock:
            tokens = list(self._get_tokenizer().tokenize(cleaned))
        return extract_nouns(tokens)

    def _nouns_of_all(self, texts: Sequence[str]) -> list[list[str]]:
        return [self.nouns(text) for text in texts]

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="janome")
        return self._executor

    @property
    def loaded(self) -> bool:
        """True once the Janome dictionary is loaded (by `warm_up` or a first use)."""
        return self._tokenizer is not None

    async def warm_up(self) -> None:
        """Load the dictionary now (about 0.2 s and 80 MiB) instead of on the first message."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._pool(), self.nouns, "準備")

    async def nouns_async(self, text: str) -> list[str]:
        """`nouns` on the analyzer's thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), self.nouns, text)

    async def nouns_many(self, texts: Sequence[str]) -> list[list[str]]:
        """Nouns of each text, tokenised in one hop to the analyzer's thread."""
        if not texts:
            return []
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool(), self._nouns_of_all, list(texts))

    def close(self) -> None:
        """Stop the worker thread; queued work still finishes."""
        if self._executor is not None:
            self._executor.shutdown(wait=False)
            self._executor = None


class JapaneseAnalyzer:
    """Noun extraction in one worker process (see `bot.memory.analysis_worker`).

    Started by `warm_up` (at start-up) or on first use; replaced if it dies. The event loop
    only encodes and decodes one JSON line per batch.
    """

    def __init__(self, *, max_chars: int = MAX_CHARS) -> None:
        self._worker = AnalyzerProcess(__name__, max_chars)

    @property
    def loaded(self) -> bool:
        """True while the worker runs with its dictionary loaded."""
        return self._worker.running

    @property
    def worker_pid(self) -> int | None:
        """The worker's process id, while one runs (benchmarks read its CPU)."""
        return self._worker.pid

    async def spawn(self) -> None:
        """Start the worker process now without waiting for its dictionary (`warm_up` waits)."""
        await self._worker.spawn()

    async def warm_up(self) -> None:
        """Start the worker now (it loads the dictionary) instead of on the first message."""
        await self._worker.start()

    async def nouns_async(self, text: str) -> list[str]:
        """Content nouns of `text` (none if the analysis failed; that is logged)."""
        return (await self._worker.nouns_many([text]))[0]

    async def nouns_many(self, texts: Sequence[str]) -> list[list[str]]:
        """Nouns of each text, in one batch with whatever else is waiting."""
        return await self._worker.nouns_many(texts)

    async def close(self) -> None:
        """Stop the worker once queued work is answered."""
        await self._worker.close()


def _serve_worker() -> None:
    """The analysis worker process: load the dictionary, then answer batches (see `serve`)."""
    analyzer = InProcessAnalyzer()
    analyzer.nouns("準備")
    serve(analyzer.nouns)


if __name__ == "__main__":
    _serve_worker()
