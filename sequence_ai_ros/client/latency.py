"""A bounded window of recent latencies and the lead time a prefetch needs against them."""

from collections import deque
from collections.abc import Sequence
import math


def quantile(values: Sequence[float], q: float) -> float | None:
    """
    Return the nearest-rank quantile.

    No interpolation: it is always a latency that really happened.
    """
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


class LatencyWindow:
    """Capture-to-chunk latencies, newest last, at most `size` of them."""

    # The location (median) follows the last few samples so a step in latency moves the lead
    # within a few chunks; the tail shape (p99 / median) comes from the whole window, which a
    # handful of samples cannot estimate.
    RECENT = 5
    TAIL_SAMPLES = 20
    PRIOR_TAIL = 2.0

    def __init__(self, size: int = 100, tail_quantile: float = 0.99) -> None:
        if size < self.TAIL_SAMPLES:
            raise ValueError(f'latency window must hold at least {self.TAIL_SAMPLES} samples')
        if not 0.5 <= tail_quantile < 1.0:
            raise ValueError('tail_quantile must be in [0.5, 1)')
        self._samples: deque[float] = deque(maxlen=size)
        self.tail_quantile = tail_quantile

    def add(self, seconds: float) -> None:
        """Record one latency; negative or non-finite values are ignored."""
        if math.isfinite(seconds) and seconds >= 0:
            self._samples.append(seconds)

    def __len__(self) -> int:
        return len(self._samples)

    def samples(self) -> list[float]:
        """Return a copy of the window, oldest first."""
        return list(self._samples)

    def q(self, q: float) -> float | None:
        """Return a quantile of the window."""
        return quantile(self._samples, q)

    def planning_latency(self) -> float | None:
        """
        Return the latency to plan a prefetch against: a high quantile adapting to a step change.

        The recent median times the window's tail ratio (p99 / median), never below the worst
        recent sample. A p99 from fewer than TAIL_SAMPLES samples is just their maximum, biased
        low, so until then the ratio is at least PRIOR_TAIL (lognormal sigma 0.3: p99/p50 2.0).
        """
        if not self._samples:
            return None
        recent = list(self._samples)[-self.RECENT:]
        median = quantile(self._samples, 0.5) or 0.0
        tail = quantile(self._samples, self.tail_quantile) or 0.0
        ratio = tail / median if median > 0 else 1.0
        if len(self._samples) < self.TAIL_SAMPLES:
            ratio = max(ratio, self.PRIOR_TAIL)
        recent_median = quantile(recent, 0.5) or 0.0
        return max(recent_median * ratio, max(recent))
