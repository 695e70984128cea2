"""
The chunk-timing arithmetic a ChunkEngine decides by (docs/CHUNK_TIMING.md derives it).

C is a chunk's seconds of motion, L the planning latency (a p99 estimate), k the requests
allowed in flight, and the lead the covered time a request starts at (L + one period).
"""

from collections.abc import Iterable
import math
from typing import TYPE_CHECKING

from ._latency import LatencyWindow
from ._playback import FALLBACK_CONTROL_RATE_HZ

# A request in flight longer than this many planning latencies (a p99 estimate) is not
# counted on: a backup starts while a slot is free. At 2 a heavy tail (3-5x the median) was
# backed up too late to shorten its stall at all; at 1, about 1% of requests are backed up.
LATE_FACTOR = 1.0


def join_in_force(join: str, latency: float | None, chunk_s: float) -> str:
    """
    Return `join`, or 'append' for an aligned or rtc join while L >= C.

    From L >= C on, every aligned chunk would land wholly in the past; appended whole they
    keep the arm moving until latency comes back down. Before any chunk (C == 0) or any
    sample, the configured join holds.
    """
    if join == 'append' or not chunk_s or latency is None or latency < chunk_s:
        return join
    return 'append'


def aligned_delay(lead: float, period: float, chunk_s: float, max_inflight: int) -> float:
    """
    Return the seconds an aligned join plays behind its capture: 0 while latency allows.

    A request fires when the coverage left is the lead and a chunk delayed by d covers until
    capture + d + C, so requests start every d + C - lead seconds; k of them in flight keep up
    while that is at least L / k, hence d = max(0, lead + L/k - C), which is 0 while
    L <= k*(C - period)/(k+1).
    """
    latency = lead - period
    return max(0.0, lead + latency / max_inflight - chunk_s)


def covered_until(now: float, buffered_s: float, captures: Iterable[float],
                  latency: float | None, chunk_s: float, *, append: bool, parked: int,
                  delay: float) -> float:
    """
    Return until when the plan and the requests in flight (`captures`) keep the arm moving.

    A request in flight for more than LATE_FACTOR times the planning latency is late beyond
    the tail planned for: it is not counted, so a backup starts while a slot is free instead
    of the arm starving behind it (the one that lands second is stale). Appended, each request
    and each `parked` chunk adds a chunk; aligned, one reaches its capture + `delay` + C.
    """
    pending = [capture for capture in captures
               if latency is None or now - capture <= LATE_FACTOR * latency]
    horizon = now + buffered_s
    if append:
        return horizon + (len(pending) + parked) * chunk_s
    for capture in sorted(pending):
        # An aligned chunk never extends what is already covered by more than one chunk (it
        # may land after the plan has run out).
        horizon = max(horizon, min(capture + delay + chunk_s, horizon + chunk_s))
    return horizon


class RequestTiming:
    """
    The ChunkEngine's questions of time: the period, what is covered, whether to ask now.

    The state is the engine's; this half reads only what the engine shows of it.
    """

    join_mode: str
    prefetch: bool
    max_inflight: int
    control_rate_hz: float | None
    latency: LatencyWindow
    chunk_hz: float | None
    chunk_steps: int

    if TYPE_CHECKING:  # the engine's read-only properties
        @property
        def now(self) -> float | None: ...
        @property
        def buffered(self) -> int: ...
        @property
        def last_due(self) -> float | None: ...
        @property
        def inflight(self) -> int: ...
        @property
        def inflight_captures(self) -> list[float]: ...
        @property
        def parked(self) -> int: ...

    # -- what a driver asks -------------------------------------------------------------

    @property
    def period(self) -> float:
        """Seconds between actions: the set rate, else the latest chunk's, else the fallback."""
        return 1.0 / (self.control_rate_hz or self.chunk_hz or FALLBACK_CONTROL_RATE_HZ)

    def buffered_seconds(self, now: float) -> float:
        """Seconds of motion left in the plan at `now`."""
        if not self.buffered:
            return 0.0
        last_due = self.last_due
        if last_due is not None:
            return max(0.0, last_due + self.period - now)
        return self.buffered * self.period

    def committed_steps(self) -> int:
        """Count the steps buffered plus those in-flight and parked requests will bring."""
        now = self.now
        if self.active_join != 'append' and now is not None:
            # An aligned chunk brings only what lies beyond the plan it replaces; counting a
            # whole chunk each would stop run() asking for the last chunks it needs.
            beyond = self.covered_until(now) - now - self.buffered_seconds(now)
            return self.buffered + math.floor(beyond / self.period + 1e-9)
        return self.buffered + (self.inflight + self.parked) * self.chunk_steps

    @property
    def active_join(self) -> str:
        """
        Return the join in force: 'aligned' ('rtc') while a chunk can land inside its horizon.

        From L >= C on, chunks are appended whole until latency comes back down
        (join_in_force). Decided from the first sample on (the window's prior makes it
        cautious), so a slow model does not begin with joins it cannot sustain.
        """
        return join_in_force(self.join_mode, self.latency.planning_latency(),
                             self._chunk_seconds())

    def aligned_delay(self) -> float:
        """
        Seconds an aligned join plays behind its capture: 0 while latency allows.

        aligned_delay() has the arithmetic; 'rtc' delays the same way: its prefix then
        starts that much after the observation.
        """
        lead = self.lead_time()
        if lead is None or not self.chunk_steps:
            return 0.0
        return aligned_delay(lead, self.period, self._chunk_seconds(), self.max_inflight)

    def covered_until(self, now: float) -> float:
        """Return the time until which the plan and the requests in flight keep the arm moving."""
        return covered_until(
            now, self.buffered_seconds(now), self.inflight_captures,
            self.latency.planning_latency(), self._chunk_seconds(),
            append=self.active_join == 'append', parked=self.parked,
            delay=self.aligned_delay())

    def lead_time(self) -> float | None:
        """How much covered time to leave when a request starts: tail latency + one period."""
        latency = self.latency.planning_latency()
        return None if latency is None else latency + self.period

    def should_request(self, now: float) -> bool:
        """Decide if a request should start now (the driver then observes and calls started)."""
        if self.inflight >= self.max_inflight:
            return False
        if not self.buffered and not self.inflight:
            return True
        if not self.prefetch:
            return False
        lead = self.lead_time()
        if lead is None:
            return False
        return self.covered_until(now) - now <= lead

    def _chunk_seconds(self) -> float:
        return self.chunk_steps * self.period
