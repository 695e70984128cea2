"""
A feature's statistics as LeRobot's meta/stats.json has them, kept as running sums.

min, max, mean, std and count over every row added; the quantiles q01 q10 q50 q90 q99 from the
first rows up to a bound (memory stays flat however long the dataset).
"""

from typing import Any

import numpy as np

QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)


class Stats:
    """Running min, max, mean, std and count of rows; quantiles from a bounded sample."""

    SAMPLE = 20_000

    def __init__(self) -> None:
        self.count = 0
        self.total: Any = 0.0
        self.squares: Any = 0.0
        self.low: Any = None
        self.high: Any = None
        self.sample: list[np.ndarray] = []
        self._sampled = 0

    def add(self, rows: np.ndarray) -> None:
        """Count `rows` (one row per frame, or per pixel for a picture)."""
        rows = np.asarray(rows, dtype=np.float64)
        if not len(rows):
            return
        self.count += len(rows)
        self.total = self.total + rows.sum(axis=0)
        self.squares = self.squares + (rows ** 2).sum(axis=0)
        low, high = rows.min(axis=0), rows.max(axis=0)
        self.low = low if self.low is None else np.minimum(self.low, low)
        self.high = high if self.high is None else np.maximum(self.high, high)
        if self._sampled < self.SAMPLE:
            taken = rows[: self.SAMPLE - self._sampled]
            self.sample.append(taken)
            self._sampled += len(taken)

    def result(self) -> dict[str, Any]:
        """Return the statistics of every row added."""
        mean = self.total / max(self.count, 1)
        std = np.sqrt(np.maximum(self.squares / max(self.count, 1) - mean ** 2, 0.0))
        result = {'min': self.low, 'max': self.high, 'mean': mean, 'std': std,
                  'count': np.array([self.count])}
        sample = np.concatenate(self.sample) if self.sample else np.zeros((1, 1))
        for q in QUANTILES:
            result[f'q{int(round(q * 100)):02d}'] = np.quantile(sample, q, axis=0)
        return result
