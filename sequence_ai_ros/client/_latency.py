"""A bounded window of recent latencies and the lead time a prefetch needs against them."""

from collections import deque
from collections.abc import Sequence
import math
from statistics import NormalDist


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
    # Below a microsecond a median is clock noise, not a scale to take a tail ratio against.
    MIN_MEDIAN_S = 1e-6

    def __init__(self, size: int = 100, tail_quantile: float = 0.99) -> None:
        if size < self.TAIL_SAMPLES:
            raise ValueError(f'latency window must hold at least {self.TAIL_SAMPLES} samples')
        if not 0.5 <= tail_quantile < 1.0:
            raise ValueError('tail_quantile must be in [0.5, 1)')
        self._samples: deque[float] = deque(maxlen=size)
        self.tail_quantile = tail_quantile
        self._z = NormalDist().inv_cdf(tail_quantile)
        self._planning: float | None = None  # cached: asked several times per control tick

    def add(self, seconds: float) -> None:
        """Record one latency; negative or non-finite values are ignored."""
        if math.isfinite(seconds) and seconds >= 0:
            self._samples.append(seconds)
            self._planning = None

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
        recent sample. Until TAIL_SAMPLES samples the ratio is at least PRIOR_TAIL (lognormal
        sigma 0.3: p99/p50 2.0); from then on at least what a lognormal fitted to the window's
        upper half gives: a nearest-rank p99 of n < 100 samples is their maximum, about the
        1 - 1/(n+1) quantile, so alone it runs low.
        """
        if not self._samples:
            return None
        if self._planning is None:
            self._planning = self._plan()
        return self._planning

    def _plan(self) -> float:
        samples = list(self._samples)
        recent = samples[-self.RECENT:]
        median = quantile(samples, 0.5) or 0.0
        tail = quantile(samples, self.tail_quantile) or 0.0
        ratio = tail / median if median > self.MIN_MEDIAN_S else 1.0
        if len(samples) < self.TAIL_SAMPLES:
            ratio = max(ratio, self.PRIOR_TAIL)
        elif median > self.MIN_MEDIAN_S:
            # The lognormal's sigma from the upper half only (E[z^2 | z > 0] = 1): the tail is
            # what matters, and a fast outlier (a clock's 1e-17 s) must not blow it up. Not
            # from fewer samples: one slow first request (a TLS handshake) would make it huge.
            upper = [math.log(x / median) ** 2 for x in samples if x >= median]
            ratio = max(ratio, math.exp(self._z * math.sqrt(sum(upper) / len(upper))))
        recent_median = quantile(recent, 0.5) or 0.0
        return max(recent_median * ratio, max(recent))
