"""
The chunk engine: which action plays at time t, and whether a request starts now.

A pure, single-threaded object with no I/O: the driver (Policy.run's sleep loop, or the ROS
node's timer) tells it when requests start, when chunks arrive and when it needs an action.
Underruns, seams, observation age and the prefetch trigger are computed here, once, for both.

Join modes (DESIGN.md has the arithmetic):
- 'append': a new chunk plays after the current one, every step (the seed's behaviour). Each
  request yields a whole chunk of motion, so k requests in flight keep up with latency < k*C.
- 'aligned': step i belongs to capture time + i/hz; on arrival the steps whose time has passed
  are dropped and the new plan takes over at once. Fresher, smaller seams; a request yields
  only C - L of motion.
"""

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
import warnings

from .latency import LatencyWindow, quantile
from .types import ActionChunk, is_absolute_space

JOIN_MODES = ('append', 'aligned')
BLENDS = ('linear', 'min_jerk')
SERIES_LIMIT = 10_000
# A request in flight this many planning latencies is stuck, not just slow: back it up.
LATE_FACTOR = 2.0


def blend_weight(i: int, n: int, blend: str) -> float:
    """
    Weight of the model's step i (0-based) in an n-step ramp out of the last action.

    Linear is the seed's ramp (a velocity kink at both ends); min_jerk is 10s^3 - 15s^4 + 6s^5,
    whose velocity and acceleration are zero at both ends.
    """
    s = (i + 1) / (n + 1)
    if blend == 'min_jerk':
        return s * s * s * (10.0 - 15.0 * s + 6.0 * s * s)
    return s


@dataclass
class PlannedStep:
    """One action of the plan: what to send, what the model said, and where it came from."""

    values: list[float]
    raw: list[float]
    chunk: int
    index: int
    capture_time: float
    due: float | None = None


@dataclass
class _Arrival:
    chunk: ActionChunk
    capture: float
    time: float
    server_ms: float | None


@dataclass
class EngineStats:
    """Counters that add up: every action played is counted once, every request once."""

    actions: int = 0
    chunks: int = 0
    requests: int = 0
    failed_requests: int = 0
    stale_chunks: int = 0
    dropped_steps: int = 0
    blended_steps: int = 0
    underruns: int = 0
    underrun_s: float = 0.0
    longest_underrun_s: float = 0.0
    max_seam_jump: float | None = None
    action_space: str | None = None
    # Bounded: a node may run for hours; quantiles over the latest samples are what matter.
    latencies: 'deque[float]' = field(default_factory=lambda: deque(maxlen=SERIES_LIMIT))
    server_inference_ms: 'deque[float]' = field(default_factory=lambda: deque(maxlen=SERIES_LIMIT))
    obs_ages: 'deque[float]' = field(default_factory=lambda: deque(maxlen=SERIES_LIMIT))


class ChunkEngine:
    """Clock-driven action buffer with prefetch, join modes, seam measurement and blending."""

    def __init__(self, *, join: str = 'append', prefetch: bool = True, max_inflight: int = 1,
                 control_hz: float | None = None, smooth_seam: int = 0,
                 blend: str = 'linear', latency_window: int = 100,
                 tail_quantile: float = 0.99, warn: bool = True,
                 latency: LatencyWindow | None = None) -> None:
        if join not in JOIN_MODES:
            raise ValueError(f'join must be one of {JOIN_MODES}, got {join!r}')
        if blend not in BLENDS:
            raise ValueError(f'blend must be one of {BLENDS}, got {blend!r}')
        if not (isinstance(max_inflight, int) and max_inflight >= 1):
            raise ValueError('max_inflight must be an integer >= 1')
        if control_hz is not None and not control_hz > 0:
            raise ValueError('control_hz must be positive')
        if smooth_seam < 0:
            raise ValueError('smooth_seam must be >= 0')
        self.join = join
        self.prefetch = prefetch
        self.max_inflight = max_inflight if prefetch else 1
        self.control_hz = control_hz
        self.smooth_seam = smooth_seam
        self.blend = blend
        # A window passed in is shared: a Policy's runs keep what earlier runs measured.
        self.latency = latency or LatencyWindow(latency_window, tail_quantile)
        self.stats = EngineStats()
        self.warnings: list[str] = []
        self._warn = warn
        self._plan: deque[PlannedStep] = deque()
        self._inflight: dict[int, float] = {}
        self._parked: dict[int, _Arrival] = {}
        self._next_ticket = 0
        self._newest_applied = -1
        self._chunk_hz: float | None = None
        self._chunk_steps = 0
        self._last_values: list[float] | None = None
        self._last_chunk = -1
        self._starved_since: float | None = None
        self._finished_underrun: float | None = None

    # -- what the driver asks -------------------------------------------------------------

    @property
    def period(self) -> float:
        """Seconds between actions: the override, else the latest chunk's rate, else 10 Hz."""
        hz = self.control_hz or self._chunk_hz or 10.0
        return 1.0 / hz

    @property
    def buffered(self) -> int:
        """Count the steps left in the plan."""
        return len(self._plan)

    @property
    def inflight(self) -> int:
        """Count the requests started and not yet arrived or failed."""
        return len(self._inflight)

    @property
    def parked(self) -> int:
        """Chunks in hand that wait for an older request (append mode keeps order)."""
        return len(self._parked)

    def buffered_seconds(self, now: float) -> float:
        """Seconds of motion left in the plan at `now`."""
        if not self._plan:
            return 0.0
        last_due = self._plan[-1].due
        if last_due is not None:
            return max(0.0, last_due + self.period - now)
        return len(self._plan) * self.period

    def committed_steps(self) -> int:
        """Count the steps buffered plus those in-flight and parked requests will bring."""
        return len(self._plan) + (len(self._inflight) + len(self._parked)) * self._chunk_steps

    @property
    def active_join(self) -> str:
        """
        Return the join in force: 'aligned' only while latency lets aligned joins keep up.

        A time-aligned chunk yields C - L of motion and k requests overlap, so it keeps up
        while L <= k*C/(k+1); beyond that (and always once L >= C) every aligned chunk would
        land mostly in the past, so chunks are appended whole until latency comes back down.
        """
        if self.join == 'append' or not self._chunk_steps:
            return self.join
        latency = self.latency.planning_latency()
        if latency is None or len(self.latency) < LatencyWindow.RECENT:
            return 'aligned'
        k, chunk_s = self.max_inflight, self._chunk_steps * self.period
        return 'append' if latency > k * chunk_s / (k + 1) else 'aligned'

    def covered_until(self, now: float) -> float:
        """
        Return the time until which the plan and the requests in flight keep the arm moving.

        A request in flight for more than LATE_FACTOR times the planning latency is stuck:
        it is not counted, so a backup starts while a slot is free instead of the arm starving
        behind it. (An ordinary tail is what the planning latency already covers; backing it
        up too would cost a wasted request each time.)
        """
        chunk_s = self._chunk_steps * self.period
        latency = self.latency.planning_latency()
        pending = [capture for capture in self._inflight.values()
                   if latency is None or now - capture <= LATE_FACTOR * latency]
        if self.active_join == 'append':
            return now + self.buffered_seconds(now) + (len(pending) + len(self._parked)) * chunk_s
        horizon = now + self.buffered_seconds(now)
        for capture in pending:
            horizon = max(horizon, capture + chunk_s)
        return horizon

    def lead_time(self) -> float | None:
        """How much covered time to leave when a request starts: tail latency + one period."""
        latency = self.latency.planning_latency()
        return None if latency is None else latency + self.period

    def should_request(self, now: float) -> bool:
        """Decide if a request should start now (the driver then observes and calls started)."""
        if len(self._inflight) >= self.max_inflight:
            return False
        if not self._plan and not self._inflight:
            return True
        if not self.prefetch:
            return False
        lead = self.lead_time()
        if lead is None:
            return False
        return self.covered_until(now) - now <= lead

    # -- what the driver tells ------------------------------------------------------------

    def request_started(self, capture_time: float) -> int:
        """Record a request for an observation captured at `capture_time`; returns its ticket."""
        ticket = self._next_ticket
        self._next_ticket += 1
        self._inflight[ticket] = capture_time
        self.stats.requests += 1
        return ticket

    def request_failed(self, ticket: int) -> None:
        """Record that a request ended without a chunk."""
        if self._inflight.pop(ticket, None) is not None:
            self.stats.failed_requests += 1
        self._release_parked()

    def chunk_arrived(self, ticket: int, chunk: ActionChunk, now: float, *,
                      server_ms: float | None = None, replace: bool = False) -> bool:
        """
        Join a chunk into the plan; False when it is stale (a newer plan is already in).

        In append mode a chunk that overtook an older request waits (parked) for it, so chunks
        play in observation order and none is wasted. `replace` installs it as the whole plan
        whatever the join mode (predict()'s semantics).
        """
        capture = self._inflight.pop(ticket, None)
        if capture is None:
            raise ValueError(f'unknown request ticket {ticket}')
        if ticket < self._newest_applied:
            self.stats.stale_chunks += 1
            self._release_parked()
            return False
        arrival = _Arrival(chunk, capture, now, server_ms)
        if self.active_join == 'append' and not replace and \
                any(t < ticket for t in self._inflight):
            self._parked[ticket] = arrival
            return True
        self._apply(ticket, arrival, replace)
        self._release_parked()
        return True

    def next_action(self, now: float) -> PlannedStep | None:
        """
        Return the action to play at `now`.

        None when the plan is empty (an underrun if moving).
        """
        if not self._plan and self._parked:
            # An older request is holding back a chunk in hand while the arm would starve:
            # give up on the older one (it becomes stale when it lands) and play the newer.
            ticket = min(self._parked)
            self._apply(ticket, self._parked.pop(ticket), False)
            self._release_parked()
        if self.join == 'aligned':
            while self._plan and self._plan[0].due is not None and \
                    self._plan[0].due < now - 0.5 * self.period:
                self._plan.popleft()
                self.stats.dropped_steps += 1
        if not self._plan:
            if self.stats.actions > 0 and self._starved_since is None:
                self._starved_since = now
            return None
        if self._starved_since is not None:
            self._end_underrun(now - self._starved_since)
        step = self._plan.popleft()
        if step.chunk != self._last_chunk:
            self._join_seam(step)
        self._last_values = step.values
        self._last_chunk = step.chunk
        self.stats.actions += 1
        self.stats.obs_ages.append(max(0.0, now - step.capture_time))
        return step

    def pop_finished_underrun(self) -> float | None:
        """Seconds of the underrun that the last next_action() ended, once; else None."""
        finished, self._finished_underrun = self._finished_underrun, None
        return finished

    def close_underrun(self, now: float) -> None:
        """End an open underrun at `now` (the run is stopping while starved)."""
        if self._starved_since is not None:
            self._end_underrun(now - self._starved_since)

    def clear(self) -> None:
        """Drop the plan and forget the in-flight requests (a stop: nothing queued may play)."""
        self._plan.clear()
        self._inflight.clear()
        self._parked.clear()
        self._newest_applied = self._next_ticket - 1
        self._starved_since = None

    # -- internals ----------------------------------------------------------------------------

    def _apply(self, ticket: int, arrival: '_Arrival', replace: bool) -> None:
        chunk, capture, now = arrival.chunk, arrival.capture, arrival.time
        self._newest_applied = ticket
        if self._starved_since is not None and now <= self._starved_since:
            self._starved_since = None  # it had landed by that tick: the driver looked too soon
        self.latency.add(now - capture)
        self.stats.latencies.append(now - capture)
        if arrival.server_ms is not None:
            self.stats.server_inference_ms.append(float(arrival.server_ms))
        self._chunk_hz = chunk.control_frequency_hz
        self._chunk_steps = len(chunk.steps)
        self.stats.chunks += 1
        self.stats.action_space = chunk.action_space
        steps = [PlannedStep(list(v), list(v), ticket, i, capture)
                 for i, v in enumerate(chunk.steps)]
        join = self.active_join
        if replace or not self._plan and join == 'append':
            self._plan = deque(steps)
        elif join == 'append':
            self._plan.extend(steps)
        else:
            self._plan = self._aligned(steps, capture, now)
        if not replace:  # predict() alone is not a loop that can fall behind
            self._check_configuration(chunk)

    def _release_parked(self) -> None:
        """Join parked chunks whose older requests have all been resolved, in ticket order."""
        while self._parked:
            ticket = min(self._parked)
            if any(t < ticket for t in self._inflight):
                return
            arrival = self._parked.pop(ticket)
            if ticket < self._newest_applied:
                self.stats.stale_chunks += 1
                continue
            self._apply(ticket, arrival, False)

    def _aligned(self, steps: list[PlannedStep], capture: float,
                 now: float) -> 'deque[PlannedStep]':
        # Nothing is playing (first chunk, or after an underrun): the arm is where the chunk
        # starts, so it plays from step 0 now; dropping its past steps would be a jump.
        base = capture if self._plan else now
        # Due times on the playback grid: the override rate if set, else the chunk's own.
        for step in steps:
            step.due = base + step.index * self.period
        fresh = [s for s in steps if s.due is not None and s.due >= now - 0.5 * self.period]
        self.stats.dropped_steps += len(steps) - len(fresh)
        if not fresh:
            return self._plan  # wholly in the past: it must not empty a plan that still runs
        return deque(fresh)

    def _end_underrun(self, seconds: float) -> None:
        self._starved_since = None
        self.stats.underruns += 1
        self.stats.underrun_s += seconds
        self.stats.longest_underrun_s = max(self.stats.longest_underrun_s, seconds)
        self._finished_underrun = seconds

    def _join_seam(self, first: PlannedStep) -> None:
        """Measure the seam on the model's own numbers, then blend if asked and allowed."""
        last = self._last_values
        if last is None or len(last) != len(first.raw):
            return
        jump = max(abs(a - b) for a, b in zip(first.raw, last, strict=False))
        previous = self.stats.max_seam_jump
        self.stats.max_seam_jump = jump if previous is None else max(previous, jump)
        if self.smooth_seam <= 0 or not is_absolute_space(self.stats.action_space):
            return
        ramp = [first] + [s for s in list(self._plan)[:self.smooth_seam - 1]
                          if s.chunk == first.chunk]
        n = self.smooth_seam
        for step in ramp:
            w = blend_weight(step.index - first.index, n, self.blend)
            step.values = [(1.0 - w) * a + w * b for a, b in zip(last, step.raw, strict=False)]
            self.stats.blended_steps += 1

    def _check_configuration(self, chunk: ActionChunk) -> None:
        """Warn once, with the numbers, when this set-up cannot keep the arm moving."""
        if self.warnings or not self.prefetch or len(self.latency) < 5:
            return
        p99 = self.latency.q(0.99) or 0.0
        chunk_s = len(chunk.steps) * self.period
        message = None
        k = self.max_inflight
        # Aligned: a request yields C - L of motion and k overlap, so it keeps up while
        # L <= k*C/(k+1); no k helps once L >= C.
        if self.join == 'aligned' and p99 > k * chunk_s / (k + 1):
            message = (f'time-aligned joining with max_inflight={k} cannot keep up: p99 '
                       f'latency {p99:.3f}s > {k} x chunk {chunk_s:.3f}s / {k + 1}; chunks '
                       'are appended whole while that lasts'
                       + ('; raise max_inflight to stay aligned' if p99 < chunk_s else ''))
        elif self.join == 'append' and p99 > chunk_s * self.max_inflight:
            message = (f'append joining with max_inflight={self.max_inflight} cannot keep up: '
                       f'p99 latency {p99:.3f}s > {self.max_inflight} x chunk {chunk_s:.3f}s; '
                       'raise max_inflight')
        if message:
            self.warnings.append(message)
            if self._warn:
                warnings.warn(message, RuntimeWarning, stacklevel=3)


def summarize(values: Sequence[float]) -> tuple[float | None, float | None]:
    """(p50, max) of a series, or (None, None) when empty."""
    return (quantile(values, 0.5), max(values)) if values else (None, None)


@dataclass
class EngineReport:
    """What an engine measured, in RunOutcome's field names (run() and the node share it)."""

    chunks: int
    underruns: int
    underrun_s: float
    longest_underrun_s: float
    moving_fraction: float
    requests: int
    failed_requests: int
    stale_chunks: int
    dropped_steps: int
    blended_steps: int
    max_seam_jump: float | None
    action_space: str | None
    latency_p50_s: float | None
    latency_p95_s: float | None
    latency_p99_s: float | None
    server_inference_p50_ms: float | None
    obs_age_p50_s: float | None
    obs_age_max_s: float | None


def report(engine: ChunkEngine, commanded_actions: int) -> EngineReport:
    """
    Summarize an engine's run; `commanded_actions` are those that really went out.

    The moving fraction is commanded time over commanded plus underrun time.
    """
    stats = engine.stats
    commanded = commanded_actions * engine.period
    latencies = list(stats.latencies)
    age_p50, age_max = summarize(list(stats.obs_ages))
    return EngineReport(
        chunks=stats.chunks, underruns=stats.underruns, underrun_s=stats.underrun_s,
        longest_underrun_s=stats.longest_underrun_s,
        moving_fraction=commanded / (commanded + stats.underrun_s) if commanded else 0.0,
        requests=stats.requests, failed_requests=stats.failed_requests,
        stale_chunks=stats.stale_chunks, dropped_steps=stats.dropped_steps,
        blended_steps=stats.blended_steps, max_seam_jump=stats.max_seam_jump,
        action_space=stats.action_space, latency_p50_s=quantile(latencies, 0.5),
        latency_p95_s=quantile(latencies, 0.95), latency_p99_s=quantile(latencies, 0.99),
        server_inference_p50_ms=quantile(list(stats.server_inference_ms), 0.5),
        obs_age_p50_s=age_p50, obs_age_max_s=age_max)
