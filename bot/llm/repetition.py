"""Noticing an answer that keeps repeating itself (a model caught in a loop).

Small models fall into loops: the same sentence, paragraph or list item again and again until
a bound stops them. The guard reads the answer as it streams, one character at a time after
folding case and runs of white space (so a loop that varies only in line breaks or
indentation is still a loop), and keeps a count of every `shingle`-character passage seen so
far. A character whose passage ending there has been seen `occurrences` times (twice before)
is repeated; `run` repeated characters in a row mean the model is looping.

Characters, not words: Japanese has no spaces, and one rule serves both languages. The third
occurrence, not the second: an answer may quote a passage once again on purpose ("here is the
corrected code"), and a loop has shown itself only when it comes round a third time. Normal
lists and tables repeat their markup (`| --- |`, `- **`), never a whole passage: every run of
repeated passages they have is broken by the words that differ from row to row.

Cost: one slice, one hash and one dict update per character (about a microsecond), and one
dict entry per character of the answer (an answer is bounded by MAX_ANSWER_CHARS).
"""

from __future__ import annotations

import re

SHINGLE_CHARS = 32
RUN_CHARS = 300
OCCURRENCES = 3

_SPACES = re.compile(r"\s+")


class RepetitionGuard:
    """Reads an answer piece by piece; `feed` says True once it is repeating a passage."""

    def __init__(
        self,
        *,
        shingle: int = SHINGLE_CHARS,
        run: int = RUN_CHARS,
        occurrences: int = OCCURRENCES,
    ) -> None:
        if shingle < 2 or run < 1 or occurrences < 2:
            raise ValueError("shingle >= 2, run >= 1 and occurrences >= 2 are required")
        self._shingle = shingle
        self._run_needed = run
        self._occurrences = occurrences
        self._tail = ""  # the last shingle - 1 folded characters
        self._counts: dict[int, int] = {}
        self._run = 0
        self.looping = False

    def feed(self, piece: str) -> bool:
        """Take the next piece of the answer; True once the answer is looping (and after)."""
        if self.looping or not piece:
            return self.looping
        text = _SPACES.sub(" ", piece.lower())
        if text.startswith(" ") and self._tail.endswith(" "):
            text = text[1:]
        window = self._tail + text
        counts = self._counts
        size = self._shingle
        needed = self._occurrences
        run = self._run
        for end in range(max(size, len(self._tail) + 1), len(window) + 1):
            key = hash(window[end - size : end])
            seen = counts.get(key, 0) + 1
            counts[key] = seen
            if seen >= needed:
                run += 1
                if run >= self._run_needed:
                    self.looping = True
                    break
            else:
                run = 0
        self._run = run
        self._tail = window[-(size - 1) :]
        return self.looping
