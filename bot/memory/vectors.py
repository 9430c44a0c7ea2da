"""Unit vectors and cosine scoring (numpy, imported on first use)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bot.runtime.blas import load_numpy


def normalise(vector: Sequence[float]) -> list[float] | None:
    """`vector` scaled to length 1, or None when it is empty, zero or not finite."""
    norm = math.sqrt(sum(x * x for x in vector))
    if not vector or norm == 0 or not math.isfinite(norm):
        return None
    return [x / norm for x in vector]


class VectorIndex:
    """Unit vectors of `source`'s documents as one float32 matrix (numpy, imported on first use).

    Scoring 500 documents of 768 dimensions takes ~0.04 ms this way against ~9 ms in Python;
    `top` picks the best few without sorting every score.
    """

    def __init__(self, source: object, units: Sequence[Sequence[float] | None], dims: int) -> None:
        load_numpy()
        import numpy as np

        self.source = source
        self.size = len(units)
        self.dims = dims
        # A tuple: the index lives until the files change, and the collector stops tracking it.
        self.rows = tuple([i for i, unit in enumerate(units) if unit and len(unit) == dims])
        rows = [units[i] for i in self.rows]
        self.matrix = np.asarray(rows, dtype=np.float32).reshape(len(self.rows), dims)

    @property
    def missing(self) -> int:
        """Documents without a vector of this size."""
        return self.size - len(self.rows)

    def scores(self, query: Sequence[float]) -> list[float | None]:
        """Cosine score per document; None where a vector is missing or of another size."""
        import numpy as np

        out: list[float | None] = [None] * self.size
        values = (self.matrix @ np.asarray(query, dtype=np.float32)).tolist()
        for row, value in zip(self.rows, values, strict=True):
            out[row] = float(value)
        return out

    def mask(self, allowed: Sequence[bool]) -> Any:
        """`allowed` (one flag per document) as a mask over the matrix's rows, for `top`."""
        import numpy as np

        return np.asarray([allowed[i] for i in self.rows], dtype=bool)

    def top(self, query: Sequence[float], mask: Any, k: int) -> list[tuple[int, float]]:
        """The `k` best (document index, cosine) among the rows `mask` allows, best first
        (ties in document order)."""
        import numpy as np

        values = self.matrix @ np.asarray(query, dtype=np.float32)
        candidates = np.flatnonzero(mask)
        if k <= 0 or not len(candidates):
            return []
        picked = values[candidates]
        if len(candidates) > k:
            keep = np.argpartition(-picked, k - 1)[:k]
            candidates, picked = candidates[keep], picked[keep]
        order = np.lexsort((candidates, -picked))
        return [(self.rows[int(candidates[i])], float(picked[i])) for i in order]
