"""
Simulated end-to-end latency: each profile's lognormal, reshaped by a scenario.

Scenarios: `steady` (the profile), `heavy_tail` (1% of calls 3-5x slower), `step` (latency
doubles once the server has been up `step_after_s` model seconds; uptime rather than a call
count so that every client sees the change at the same moment), `fast` (median 0.15 s).
"""

from collections.abc import Callable
import math
import random
import time

from .catalogue import ModelProfile

FAST_MEDIAN_S = 0.15
HEAVY_TAIL_P = 0.01
HEAVY_TAIL_FACTOR = (3.0, 5.0)
STEP_FACTOR = 2.0


class LatencySampler:
    """Draws a wall-clock latency (seconds, already scaled) for one call to a profile."""

    def __init__(self, scenario: str, time_scale: float, step_after_s: float = 30.0,
                 seed: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.scenario = scenario
        self._time_scale = time_scale
        self._step_at = clock() + step_after_s * time_scale
        self._clock = clock
        self._rng = random.Random(seed)

    def sample(self, profile: ModelProfile) -> float:
        """One latency for `profile` (whose median is already scaled)."""
        median = profile.latency_median_s
        if self.scenario == 'fast':
            median = FAST_MEDIAN_S * self._time_scale
        if median <= 0:
            return 0.0
        latency = median * math.exp(self._rng.gauss(0.0, profile.latency_sigma))
        if self.scenario == 'heavy_tail' and self._rng.random() < HEAVY_TAIL_P:
            latency *= self._rng.uniform(*HEAVY_TAIL_FACTOR)
        elif self.scenario == 'step' and self._clock() >= self._step_at:
            latency *= STEP_FACTOR
        return latency
