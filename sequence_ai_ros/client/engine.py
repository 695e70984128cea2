"""
The chunk engine: which action plays at time t, and whether a request starts now.

A pure, single-threaded object with no I/O: the driver (Policy.run's sleep loop, or the ROS
node's timer) tells it when requests start, when chunks arrive and when it needs an action.
Underruns, seams, observation age and the prefetch trigger are computed here, once, for both.

Join modes (DESIGN.md has the arithmetic):
- 'append': a new chunk plays after the current one, every step (the seed's behaviour). Each
  request yields a whole chunk of motion, so k requests in flight keep up with latency < k*C.
- 'aligned': step i belongs to capture time + i/hz; on arrival the steps whose time has passed
  are dropped and the new plan takes over. Fresher, smaller seams; a request yields only
  C - L of motion, so k requests keep up while L <= k*C/(k+1). Beyond that, up to L < C, the
  join is delayed by the least that lets them keep up (aligned_delay); from L >= C on chunks
  are appended whole. On absolute spaces the join may start a few steps earlier in the new
  chunk than its time says, at the step nearest the action it follows (a smaller seam; never
  less motion than the time-aligned join would have given).
- 'rtc': real-time chunking (client/rtc.py). The aligned join's timing (its delays and its
  appending from L >= C on); each request carries the plan's next d actions (the prefix) for
  the model to start its chunk with, and an answer is joined at the step that really plays
  next (the steps played since its prefix began are dropped), never blended. One whose
  prefix a newer chunk overtook joins as 'aligned' would. A server that ignores the prefix
  is detected from its answer and the engine falls back to 'aligned' (with the configured
  blend), once.

Invariants (test/test_engine_properties.py): every action played is a step the model produced,
or a blend (smooth_seam, absolute spaces) of it with the action before; the steps of a chunk
play in index order and chunks in request order; a chunk never plays after a newer one; every
step joined is played, dropped or still buffered; every request is joined, stale, failed or
still pending.
"""

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
import itertools
import math
from typing import Any
import warnings

from sequence_ai_ros.contract.action_spaces import is_absolute_space

# The counters and the summary live in engine_stats; importers keep finding them here.
from .engine_stats import EngineReport, EngineStats, report, summarize
from .latency import LatencyWindow
from .rtc import (
    delay_steps,
    fallback_message,
    honoured,
    measure_prefix,
    PREFIX_TOLERANCE,
    PrefixBook,
    SentPrefix,
    violation_message,
)
from .types import ActionChunk

__all__ = ['BLENDS', 'blend_weight', 'ChunkEngine', 'EngineReport', 'EngineStats', 'JOIN_MODES',
           'LATE_FACTOR', 'PlannedStep', 'report', 'summarize']
JOIN_MODES = ('append', 'aligned', 'rtc')
BLENDS = ('linear', 'min_jerk')
# A request in flight longer than this many planning latencies (a p99 estimate) is not
# counted on: a backup starts while a slot is free. At 2 a heavy tail (3-5x the median) was
# backed up too late to shorten its stall at all; at 1, about 1% of requests are backed up.
LATE_FACTOR = 1.0


# The engine sees one round trip; it cannot tell a slow network or model from a gateway whose
# workers are all busy, where more requests in flight only lengthen the queue.
_QUEUEING_CAVEAT = (' (unless the latency is requests queueing at a saturated gateway: '
                    'more in flight would only lengthen its queue)')


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
    rtc: bool = False  # joined as the model's continuation of a prefix: never blended


@dataclass
class _Arrival:
    chunk: ActionChunk
    capture: float
    time: float
    server_ms: float | None
    prefix: SentPrefix | None = None


class ChunkEngine:
    """Clock-driven action buffer with prefetch, join modes, seam measurement and blending."""

    def __init__(self, *, join: str = 'append', prefetch: bool = True, max_inflight: int = 1,
                 control_hz: float | None = None, smooth_seam: int = 0,
                 blend: str = 'linear', latency_window: int = 100,
                 tail_quantile: float = 0.99, warn: bool = True,
                 latency: LatencyWindow | None = None,
                 prefix_tolerance: float = PREFIX_TOLERANCE) -> None:
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
        self._configuration_warned = False
        self._prefixes = PrefixBook(prefix_tolerance) if join == 'rtc' else None
        self.prefix_tolerance = prefix_tolerance
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
        self._now: float | None = None  # the latest time the driver gave

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
        if self.active_join != 'append' and self._now is not None:
            # An aligned chunk brings only what lies beyond the plan it replaces; counting a
            # whole chunk each would stop run() asking for the last chunks it needs.
            now = self._now
            beyond = self.covered_until(now) - now - self.buffered_seconds(now)
            return len(self._plan) + math.floor(beyond / self.period + 1e-9)
        return len(self._plan) + (len(self._inflight) + len(self._parked)) * self._chunk_steps

    @property
    def active_join(self) -> str:
        """
        Return the join in force: 'aligned' ('rtc') while a chunk can land inside its horizon.

        Aligned joins keep up while the planning latency L < C, delayed by aligned_delay()
        when L > k*C/(k+1). From L >= C on, every aligned chunk would land wholly in the past,
        so chunks are appended whole until latency comes back down. Decided from the first
        sample on (the window's prior makes it cautious), so a slow model does not begin with
        joins it cannot sustain.
        """
        if self.join == 'append' or not self._chunk_steps:
            return self.join
        latency = self.latency.planning_latency()
        if latency is None or latency < self._chunk_seconds():
            return self.join
        return 'append'

    def aligned_delay(self) -> float:
        """
        Seconds an aligned join plays behind its capture time: 0 while latency allows.

        A request fires when the coverage left is the lead (L + one period) and a chunk
        delayed by d covers until capture + d + C, so requests start every d + C - lead
        seconds; k of them in flight keep up while that is at least L / k, hence
        d = max(0, lead + L/k - C), which is 0 while L <= k*(C - period)/(k+1). 'rtc' delays
        the same way: its prefix then starts that much after the observation.
        """
        lead = self.lead_time()
        if lead is None or not self._chunk_steps:
            return 0.0
        latency = lead - self.period
        return max(0.0, lead + latency / self.max_inflight - self._chunk_seconds())

    def covered_until(self, now: float) -> float:
        """
        Return the time until which the plan and the requests in flight keep the arm moving.

        A request in flight for more than LATE_FACTOR times the planning latency is late
        beyond the tail planned for: it is not counted, so a backup starts while a slot is
        free instead of the arm starving behind it (the one that lands second is stale).
        """
        self._now = now
        chunk_s = self._chunk_seconds()
        latency = self.latency.planning_latency()
        pending = [capture for capture in self._inflight.values()
                   if latency is None or now - capture <= LATE_FACTOR * latency]
        horizon = now + self.buffered_seconds(now)
        if self.active_join == 'append':
            return horizon + (len(pending) + len(self._parked)) * chunk_s
        delay = self.aligned_delay()
        for capture in sorted(pending):
            # An aligned chunk reaches capture + delay + C, but never extends what is already
            # covered by more than one chunk (it may land after the plan has run out).
            horizon = max(horizon, min(capture + delay + chunk_s, horizon + chunk_s))
        return horizon

    def lead_time(self) -> float | None:
        """How much covered time to leave when a request starts: tail latency + one period."""
        latency = self.latency.planning_latency()
        return None if latency is None else latency + self.period

    def should_request(self, now: float) -> bool:
        """Decide if a request should start now (the driver then observes and calls started)."""
        self._now = now
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
        lead = self.lead_time()
        if self._prefixes is not None and lead is not None and self.active_join == 'rtc':
            # The plan's next d actions from where the chunk will start, as they will be sent
            # to the arm (blended or not).
            sent = self._prefixes.record(
                ticket, self.stats.actions, (s.values for s in self._plan),
                delay_steps(lead, self.period), round(self.aligned_delay() / self.period),
                self.smooth_seam, self._chunk_steps, self.stats.action_space, self._chunk_hz)
            self.stats.prefixes_sent += sent is not None
        return ticket

    def request_options(self, ticket: int) -> dict[str, Any]:
        """Return the options a request carries beyond the driver's: its RTC prefix, if any."""
        sent = self.sent_prefix(ticket)
        return sent.options() if sent is not None else {}

    def sent_prefix(self, ticket: int) -> SentPrefix | None:
        """Return the RTC prefix a request in flight carries (None: none)."""
        return self._prefixes.sent(ticket) if self._prefixes is not None else None

    def request_failed(self, ticket: int) -> None:
        """Record that a request ended without a chunk."""
        if self._prefixes is not None:
            self._prefixes.pop(ticket)
        if self._inflight.pop(ticket, None) is not None:
            self.stats.failed_requests += 1
        self._release_parked(self._now)

    def chunk_arrived(self, ticket: int, chunk: ActionChunk, now: float, *,
                      server_ms: float | None = None, replace: bool = False,
                      prefix_report: Any = None) -> bool:
        """
        Join a chunk into the plan; False when it is stale (a newer plan is already in).

        In append mode a chunk that overtook an older request waits (parked) for it, so chunks
        play in observation order and none is wasted. `replace` installs it as the whole plan
        whatever the join mode (predict()'s semantics). `prefix_report` is the answer's account
        of the RTC prefix it used (Prediction.rtc); none, for a request that carried one, means
        the server ignored it.
        """
        capture = self._inflight.pop(ticket, None)
        if capture is None:
            raise ValueError(f'unknown request ticket {ticket}')
        sent = self._prefixes.pop(ticket) if self._prefixes is not None else None
        if sent is not None and not honoured(prefix_report):
            self._fall_back(ticket)
            sent = None
        if ticket < self._newest_applied:
            self.stats.stale_chunks += 1
            self._release_parked(now)
            return False
        tolerance = self.prefix_tolerance
        if sent is not None and measure_prefix(self.stats, chunk, sent, tolerance):
            self._say(violation_message(sent.gap(chunk.steps), tolerance))
        arrival = _Arrival(chunk, capture, now, server_ms, sent)
        if self.active_join == 'append' and not replace and \
                any(t < ticket for t in self._inflight):
            self._parked[ticket] = arrival
            return True
        self._apply(ticket, arrival, replace, now)
        self._release_parked(now)
        return True

    def next_action(self, now: float) -> PlannedStep | None:
        """
        Return the action to play at `now`.

        None when the plan is empty (an underrun if moving).
        """
        self._now = now
        if not self._plan and self._parked:
            # An older request is holding back a chunk in hand while the arm would starve:
            # give up on the older one (it becomes stale when it lands) and play the newer.
            self._drop_stale_parked()
            if self._parked:
                ticket = min(self._parked)
                self._apply(ticket, self._parked.pop(ticket), False, now)
                self._release_parked(now)
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
        if self._prefixes is not None:
            self._prefixes.note_played(self.stats.actions, step.values)
        self.stats.obs_ages.append(max(0.0, now - step.capture_time))
        return step

    def upcoming(self, count: int) -> list[list[float]]:
        """Return the values of the next `count` planned steps (fewer if fewer), not consumed."""
        return [step.values for step in itertools.islice(self._plan, max(0, count))]

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
        self.stats.dropped_steps += len(self._plan)
        self._plan.clear()
        self._inflight.clear()
        self._parked.clear()
        if self._prefixes is not None:
            self._prefixes.clear()
        self._newest_applied = self._next_ticket - 1
        self._starved_since = None

    # -- internals ----------------------------------------------------------------------------

    def _apply(self, ticket: int, arrival: '_Arrival', replace: bool,
               now: float | None) -> None:
        """Join a chunk at `now` (later than its arrival if it was parked)."""
        chunk, capture, landed = arrival.chunk, arrival.capture, arrival.time
        now = landed if now is None else max(now, landed)
        self._newest_applied = ticket
        if self._starved_since is not None and landed <= self._starved_since:
            self._starved_since = None  # it had landed by that tick: the driver looked too soon
        self.latency.add(landed - capture)
        self.stats.latencies.append(landed - capture)
        if arrival.server_ms is not None:
            self.stats.server_inference_ms.append(float(arrival.server_ms))
        self._chunk_hz = chunk.control_frequency_hz
        self._chunk_steps = len(chunk.steps)
        self.stats.chunks += 1
        self.stats.planned_steps += len(chunk.steps)
        self.stats.action_space = chunk.action_space
        steps = [PlannedStep(list(v), list(v), ticket, i, capture)
                 for i, v in enumerate(chunk.steps)]
        join = self.active_join
        # An answer that continues what played since its observation joins at the step due
        # next, whatever the join in force has become meanwhile (a long wait makes it 'append').
        joined = self._rtc_join(steps, arrival.prefix, now) if arrival.prefix and not replace \
            else None
        if joined is not None:
            self._plan = joined
        elif replace or not self._plan and join == 'append':
            self._count_join('replaced' if replace else 'started')
            self.stats.dropped_steps += len(self._plan)
            self._plan = deque(steps)
        elif join == 'append':
            self._count_join('appended')
            self._plan.extend(steps)
        else:
            self._plan = self._aligned(steps, capture, now)
        if not replace:  # predict() alone is not a loop that can fall behind
            self._check_configuration(chunk)

    def _release_parked(self, now: float | None) -> None:
        """Join parked chunks whose older requests have all been resolved, in ticket order."""
        self._drop_stale_parked()
        while self._parked:
            ticket = min(self._parked)
            if any(t < ticket for t in self._inflight):
                return
            self._apply(ticket, self._parked.pop(ticket), False, now)
            self._drop_stale_parked()

    def _drop_stale_parked(self) -> None:
        """Count as stale the parked chunks that a newer plan has overtaken: they never play."""
        # (A chunk parks in append mode; if latency then drops and an aligned join applies a
        # newer chunk at once, the parked one is older than the plan.)
        for ticket in [t for t in self._parked if t < self._newest_applied]:
            del self._parked[ticket]
            self.stats.stale_chunks += 1

    def _chunk_seconds(self) -> float:
        return self._chunk_steps * self.period

    def _aligned(self, steps: list[PlannedStep], capture: float,
                 now: float) -> 'deque[PlannedStep]':
        period = self.period
        # Due times on the playback grid (the override rate if set, else the chunk's own),
        # delayed while latency needs it.
        base = capture + self.aligned_delay()
        if not self._plan:
            # Nothing is playing (first chunk, or after an underrun): the arm stands where the
            # last action left it, so the chunk plays from step 0 now (on an absolute space
            # from the step nearest that action, up to its time-aligned one).
            self._count_join('started')
            start = 0
            if self._last_values is not None and is_absolute_space(self.stats.action_space):
                aligned = max(0, min(len(steps) - 1, math.floor((now - base) / period + 0.5)))
                start = self._join_index(steps, aligned, self._last_values)
            return self._retime(steps[start:], start, now)
        current = [s.index for s in steps if base + s.index * period >= now - 0.5 * period]
        if not current:
            self._count_join('past')
            self.stats.dropped_steps += len(steps)
            return self._plan  # wholly in the past: it must not empty a plan that still runs
        first = current[0]
        due = base + first * period
        delay = base - capture
        self._count_join('delayed' if delay > 0 else 'aligned')
        self.stats.max_join_delay_s = max(self.stats.max_join_delay_s, delay)
        # The old plan plays on until the new one's first step; what the driver's late ticks
        # left behind by more than a period is dropped here, not tick by tick: run() already
        # catches up on its own deadlines, and dropping as well would drain the plan early.
        keep, kept_end = [], now
        for step, step_due in self._timeline(now):
            if step_due >= due - 0.5 * period:
                break
            if step_due >= now - period:
                keep.append(step)
                kept_end = step_due + period
        self.stats.dropped_steps += len(self._plan) - len(keep)
        first = self._join_index(steps, first, keep[-1].values if keep else self._last_values)
        # A delayed join whose old plan ends first starts when it ends: no gap, and fresher.
        return deque(keep) + self._retime(steps[first:], first, min(due, kept_end))

    def _rtc_join(self, steps: list[PlannedStep], sent: SentPrefix,
                  now: float) -> 'deque[PlannedStep] | None':
        """
        Join an answer to a prefix at the step that plays next: drop the steps played since.

        None when what played since its observation was not the prefix (the aligned join then
        takes it). The plan it replaces is dropped at once, as LeRobot's RTC queue does; its
        steps are the model's own continuation, never blended, unless it came late.
        """
        assert self._prefixes is not None
        played = self._prefixes.join_index(sent, self.stats.actions,
                                           (s.values for s in self._plan))
        if played is None:
            return None
        if played >= len(steps):
            self._count_join('past')
            self.stats.dropped_steps += len(steps)
            return self._plan
        self._count_join('rtc')
        # Later than its prefix ran out, the answer continues from a point the arm has passed:
        # a seam like any other, which the configured blend may ramp (absolute spaces).
        late = played > len(sent.rows)
        self.stats.rtc_late_joins += late
        for step in steps:
            step.rtc = not late
        # A delayed join: the plan's steps before the prefix play first, then the chunk.
        keep = [self._plan.popleft() for _ in range(min(-played, len(self._plan)))]
        self.stats.max_join_delay_s = max(self.stats.max_join_delay_s,
                                          sent.skip * self.period)
        self.stats.dropped_steps += len(self._plan)
        start = now + len(keep) * self.period
        return deque(keep) + self._retime(steps[max(0, played):], max(0, played), start)

    def _fall_back(self, ticket: int) -> None:
        """Join as 'aligned' from now on: the server answered a prefix without using it."""
        self.join = 'aligned'
        self._prefixes = None
        self.stats.rtc_fallback = True
        self._say(fallback_message(ticket, self.smooth_seam, self.blend))

    def _say(self, message: str) -> None:
        self.warnings.append(message)
        if self._warn:
            warnings.warn(message, RuntimeWarning, stacklevel=4)

    def _join_index(self, steps: list[PlannedStep], aligned: int,
                    reference: list[float] | None) -> int:
        """On absolute spaces the step nearest the action before, up to the aligned one."""
        if aligned <= 0 or reference is None or not is_absolute_space(self.stats.action_space):
            return aligned
        nearest = _nearest(steps[:aligned + 1], reference)
        if nearest < aligned:
            self._count_join('nearest')
        return nearest

    def _count_join(self, how: str) -> None:
        self.stats.joins[how] = self.stats.joins.get(how, 0) + 1

    def _retime(self, steps: list[PlannedStep], skipped: int,
                start: float) -> 'deque[PlannedStep]':
        """Play `steps` one period apart from `start`, counting the `skipped` before them."""
        for step in steps:
            step.due = start + (step.index - steps[0].index) * self.period
        self.stats.dropped_steps += skipped
        return deque(steps)

    def _timeline(self, now: float) -> Iterator[tuple[PlannedStep, float]]:
        """Yield the plan's steps with when each will play (appended steps follow in turn)."""
        due = now - self.period
        for step in self._plan:
            due = step.due if step.due is not None else due + self.period
            yield step, due

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
        if self.smooth_seam <= 0 or first.rtc or not is_absolute_space(self.stats.action_space):
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
        if self._configuration_warned or not self.prefetch or len(self.latency) < 5:
            return
        p99 = self.latency.q(0.99) or 0.0
        chunk_s = len(chunk.steps) * self.period
        message = None
        k = self.max_inflight
        # Aligned: a request yields C - L of motion and k overlap, so it keeps up while
        # L <= k*C/(k+1), later (aligned_delay) up to L < C; no k helps once L >= C.
        if self.join == 'aligned' and p99 > k * chunk_s / (k + 1):
            message = (f'time-aligned joining with max_inflight={k} cannot keep up: p99 '
                       f'latency {p99:.3f}s > {k} x chunk {chunk_s:.3f}s / {k + 1}; '
                       + ('chunks are appended whole while that lasts' if p99 >= chunk_s else
                          f'joins play up to {self.aligned_delay():.3f}s behind their '
                          'capture while that lasts; raise max_inflight to stay aligned'
                          + _QUEUEING_CAVEAT))
        elif self.join == 'rtc' and p99 > k * chunk_s / (k + 1):
            message = (f'real-time chunking with max_inflight={k} cannot keep up: p99 latency '
                       f'{p99:.3f}s > {k} x chunk {chunk_s:.3f}s / {k + 1}; '
                       + ('chunks are appended whole, with no prefix, while that lasts'
                          if p99 >= chunk_s else
                          f'joins play up to {self.aligned_delay():.3f}s behind their capture '
                          'while that lasts; raise max_inflight' + _QUEUEING_CAVEAT))
        elif self.join == 'append' and p99 > chunk_s * self.max_inflight:
            message = (f'append joining with max_inflight={self.max_inflight} cannot keep up: '
                       f'p99 latency {p99:.3f}s > {self.max_inflight} x chunk {chunk_s:.3f}s; '
                       'raise max_inflight' + _QUEUEING_CAVEAT)
        if message:
            self._configuration_warned = True
            self._say(message)


def _nearest(steps: list[PlannedStep], reference: list[float]) -> int:
    """
    Return the index of the step nearest `reference` (largest per-dimension gap), later on ties.

    An absolute plan is a path: where the arm has not gone as far as the new plan assumed by
    now (it was slowing into the previous goal, say), joining at the time-aligned step would
    jump ahead along the path; joining where the path passes nearest the arm does not.
    """
    best, best_jump = steps[-1].index, math.inf
    for step in reversed(steps):
        if len(step.raw) != len(reference):
            return steps[-1].index
        jump = max(abs(a - b) for a, b in zip(step.raw, reference, strict=False))
        if jump < best_jump:
            best, best_jump = step.index, jump
    return best
