"""Token estimates that learn: per model, real prompt tokens per token of the project's estimator.

Ollama (`prompt_eval_count`) and OpenAI-compatible servers (`usage.prompt_tokens`) report how
many tokens a prompt really had. Each report that can be trusted moves the model's factor
(a running mean for the first samples, then an exponential moving average), always within
[MIN_FACTOR, MAX_FACTOR].

Which reports are trusted:
- none for prompts estimated under MIN_SAMPLE_TOKENS (the chat template's fixed overhead
  dominates), none with images (the estimator does not count them), none whose ratio lies
  outside SAMPLE_RANGE (a broken or fully cached count);
- a count can only ever be too *low*, never too high: a prompt the server cut to its window,
  or a server that counts only the tokens it did not have in its prompt cache (some Ollama
  versions; the ollama client exposes no cached-token field to tell). Such a report is a lower
  bound, so it may raise the factor but never lower it. A report near the window is treated
  so, and a model is marked as counting partially once a grown prompt of the same session and
  purpose is reported clearly smaller than the one before (only a prefix cache explains that);
  from then on it only learns upward, which keeps its budgets on the safe side.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, replace

from bot.store.repos.token_factors import StoredTokenFactor, TokenFactorRepository

log = logging.getLogger(__name__)

MIN_FACTOR = 0.5
MAX_FACTOR = 2.5
# Reports further off than this from the estimate are not a tokenizer difference.
SAMPLE_RANGE = (0.25, 4.0)
MIN_SAMPLE_TOKENS = 256
# The first samples form a running mean; later ones weigh this much (an EMA).
MIN_WEIGHT = 0.1
# A grown prompt reported below this share of the previous count was partly counted.
PARTIAL_COUNT_DROP = 0.8
# A report at this share of the window or more may have been cut to fit it.
NEAR_WINDOW = 0.95
TRACKED_CONVERSATIONS = 512


@dataclass(frozen=True)
class Calibration:
    """What is known about one model's tokenizer relative to the estimator."""

    factor: float = 1.0
    samples: int = 0
    partial_counts: bool = False


def _bounded(value: float) -> float:
    return min(MAX_FACTOR, max(MIN_FACTOR, value))


def learn(current: Calibration, ratio: float, *, lower_bound: bool = False) -> Calibration:
    """`current` moved toward one trusted sample (real / estimated); a lower bound only raises."""
    target = _bounded(ratio)
    if lower_bound and target <= current.factor:
        return current
    weight = max(1.0 / (current.samples + 1), MIN_WEIGHT)
    factor = _bounded(current.factor + weight * (target - current.factor))
    return replace(current, factor=factor, samples=current.samples + 1)


@dataclass(frozen=True)
class _Seen:
    estimated: int
    reported: int


class TokenCalibrator:
    """Keeps every model's factor, learns from reported prompt counts and persists them."""

    def __init__(self, store: TokenFactorRepository | None = None) -> None:
        self._store = store
        self._calibrations: dict[str, Calibration] = {}
        self._last: OrderedDict[tuple[str, str, str], _Seen] = OrderedDict()

    async def load(self) -> None:
        """Read the stored factors (a damaged value is ignored, the model starts at 1.0)."""
        if self._store is None:
            return
        for row in await self._store.all():
            if not MIN_FACTOR <= row.factor <= MAX_FACTOR:
                log.warning("ignoring stored token factor %s for %s", row.factor, row.model)
                continue
            self._calibrations[row.model] = Calibration(
                row.factor, max(0, row.samples), row.partial_counts
            )
        log.debug("token factors loaded for %d models", len(self._calibrations))

    def factor(self, model: str) -> float:
        """Real prompt tokens per estimated token for `model` (1.0 until it has samples)."""
        return self.calibration(model).factor

    def calibration(self, model: str) -> Calibration:
        """Everything learned about `model` so far."""
        return self._calibrations.get(model, Calibration())

    def _previous(self, key: tuple[str, str, str] | None, seen: _Seen) -> _Seen | None:
        """The last report of the same conversation and purpose; remembers this one."""
        if key is None:
            return None
        previous = self._last.pop(key, None)
        self._last[key] = seen
        while len(self._last) > TRACKED_CONVERSATIONS:
            self._last.popitem(last=False)
        return previous

    async def observe(
        self,
        model: str,
        *,
        estimated: int,
        reported: int | None,
        window: int,
        conversation: tuple[str, str] | None = None,
        has_images: bool = False,
    ) -> Calibration:
        """Learn from one call's reported prompt count; returns the model's calibration."""
        current = self.calibration(model)
        if reported is None or reported <= 0:
            return current
        seen = _Seen(estimated, reported)
        previous = self._previous(None if conversation is None else (model, *conversation), seen)
        if (
            previous is not None
            and estimated >= previous.estimated
            and reported < previous.reported * PARTIAL_COUNT_DROP
        ):
            if not current.partial_counts:
                log.info(
                    "%s reported %d prompt tokens after %d for a longer prompt: it counts only "
                    "uncached tokens, so its token factor now only learns upward",
                    model,
                    reported,
                    previous.reported,
                )
                await self._keep(model, replace(current, partial_counts=True))
            return self.calibration(model)
        if has_images or estimated < MIN_SAMPLE_TOKENS:
            return current
        ratio = reported / estimated
        if not SAMPLE_RANGE[0] <= ratio <= SAMPLE_RANGE[1]:
            log.debug(
                "ignoring implausible prompt count for %s: %d vs estimated %d",
                model,
                reported,
                estimated,
            )
            return current
        lower_bound = current.partial_counts or reported >= window * NEAR_WINDOW
        updated = learn(current, ratio, lower_bound=lower_bound)
        if updated != current:
            await self._keep(model, updated)
        return updated

    async def _keep(self, model: str, calibration: Calibration) -> None:
        self._calibrations[model] = calibration
        if self._store is None:
            return
        try:
            await self._store.save(
                StoredTokenFactor(
                    model, calibration.factor, calibration.samples, calibration.partial_counts
                )
            )
        except Exception:
            log.exception("could not store the token factor of %s", model)
