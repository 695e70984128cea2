"""
The chunk engine: which action plays at time t, and whether a request starts now.

A pure, single-threaded object with no I/O: the driver (Policy.run's sleep loop, or the ROS
node's timer) tells it when requests start, when chunks arrive and when it needs an action.
Underruns, seams, observation age and the prefetch trigger are computed here, once, for both.
It is built from a PlaybackOptions, whose defaults are the only ones. The timing arithmetic is
in _timing.py (docs/CHUNK_TIMING.md derives it), the joins in _joins.py, the seam blend in
_blend.py, the configuration warning in _engine_warnings.py and the counters and report in
_engine_stats.py.

Invariants (test/unit/test_engine_properties.py): every action played is a step the model produced,
or a blend (smooth_seam, absolute spaces) of it with the action before; the steps of a chunk
play in index order and chunks in request order; a chunk never plays after a newer one; every
step joined is played, dropped or still buffered; every request is joined, stale, failed or
still pending.
"""

from collections import deque
import itertools
from typing import Any
import warnings

from sequence_ai_ros.contract.action_spaces import is_absolute_space

from ._blend import blend_seam
from ._engine_stats import EngineStats
from ._engine_warnings import configuration_warning
from ._joins import join_chunk, JoinSite
from ._latency import LatencyWindow
from ._plan import Arrival, gap, PlannedStep
from ._playback import DEFAULT_PLAYBACK, PlaybackOptions
from ._rtc import (
    delay_steps,
    fallback_message,
    honoured,
    PREFIX_TOLERANCE,
    PrefixBook,
    SentPrefix,
    violation_message,
)
from ._timing import RequestTiming
from ._types import ActionChunk


class ChunkEngine(RequestTiming):
    """Clock-driven action buffer with prefetch, join modes, seam measurement and blending."""

    def __init__(self, playback: PlaybackOptions = DEFAULT_PLAYBACK, *,
                 control_rate_hz: float | None = None, latency: LatencyWindow | None = None,
                 warn: bool = True, prefix_tolerance: float = PREFIX_TOLERANCE) -> None:
        """
        Play as `playback` says (its retries are the stream's), at `control_rate_hz` if given.

        A `latency` window passed in is shared: a Policy's runs keep what earlier runs measured.
        """
        if control_rate_hz is not None and not control_rate_hz > 0:
            raise ValueError('control_rate_hz must be positive')
        self.join_mode = playback.join_mode
        self.prefetch = playback.prefetch
        self.max_inflight = playback.max_inflight if playback.prefetch else 1
        self.control_rate_hz = control_rate_hz
        self.smooth_seam = playback.smooth_seam
        self.seam_blend = playback.seam_blend
        self.latency = latency or LatencyWindow()
        self.stats = EngineStats()
        self.warnings: list[str] = []
        self.chunk_hz: float | None = None  # the latest chunk's rate and length
        self.chunk_steps = 0
        self._warn = warn
        self._configuration_warned = False
        self._prefixes = PrefixBook(prefix_tolerance) if self.join_mode == 'rtc' else None
        self.prefix_tolerance = prefix_tolerance
        self._plan: deque[PlannedStep] = deque()
        self._inflight: dict[int, float] = {}
        self._parked: dict[int, Arrival] = {}
        self._next_ticket = 0
        self._newest_applied = -1
        self._last_values: list[float] | None = None
        self._last_chunk = -1
        self._starved_since: float | None = None
        self._finished_underrun: float | None = None
        self._now: float | None = None

    # -- the state the timing reads (RequestTiming) ------------------------------------------

    @property
    def now(self) -> float | None:
        """Return the latest time a driver gave (None before the first)."""
        return self._now

    @property
    def buffered(self) -> int:
        """Count the steps left in the plan."""
        return len(self._plan)

    @property
    def last_due(self) -> float | None:
        """Return when the plan's last step is due (None: empty, or appended, not timed)."""
        return self._plan[-1].due if self._plan else None

    @property
    def inflight(self) -> int:
        """Count the requests started and not yet arrived or failed."""
        return len(self._inflight)

    @property
    def inflight_captures(self) -> list[float]:
        """Return the capture times of the requests in flight."""
        return list(self._inflight.values())

    @property
    def parked(self) -> int:
        """Chunks in hand that wait for an older request (append mode keeps order)."""
        return len(self._parked)

    def should_request(self, now: float) -> bool:
        """Decide if a request should start now (the driver then observes and calls started)."""
        self._now = now
        return super().should_request(now)

    def covered_until(self, now: float) -> float:
        """Return the time until which the plan and the requests in flight keep the arm moving."""
        self._now = now
        return super().covered_until(now)

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
                self.smooth_seam, self.chunk_steps, self.stats.action_space, self.chunk_hz)
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

    def request_withdrawn(self, ticket: int) -> None:
        """Forget a request cancelled before it left: nothing was sent, so it is not counted."""
        if self._prefixes is not None:
            self._prefixes.pop(ticket)
        if self._inflight.pop(ticket, None) is not None:
            self.stats.requests -= 1

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
        if sent is not None:
            gap = sent.gap(chunk.steps[:len(sent.rows)])
            if self.stats.count_prefix_gap(gap, tolerance):
                self._say(violation_message(gap, tolerance))
        arrival = Arrival(chunk, capture, now, server_ms, sent)
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

    def _apply(self, ticket: int, arrival: Arrival, replace: bool, now: float | None) -> None:
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
        self.chunk_hz = chunk.control_frequency_hz
        self.chunk_steps = len(chunk.steps)
        self.stats.chunks += 1
        self.stats.planned_steps += len(chunk.steps)
        self.stats.action_space = chunk.action_space
        # An answer that continues what played since its observation joins at the step due
        # next, whatever the join in force has become meanwhile (a long wait makes it 'append').
        played = None
        if arrival.prefix is not None and not replace and self._prefixes is not None:
            played = self._prefixes.join_index(arrival.prefix, self.stats.actions,
                                               (s.values for s in self._plan))
        site = JoinSite(self._plan, self.period, self._last_values,
                        is_absolute_space(self.stats.action_space))
        self._plan = join_chunk(site, arrival.steps(ticket), mode=self.active_join,
                                replace=replace, capture=capture, delay=self.aligned_delay(),
                                now=now, sent=arrival.prefix, played=played)
        self.stats.count_join(site.event)
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

    def _fall_back(self, ticket: int) -> None:
        """Join as 'aligned' from now on: the server answered a prefix without using it."""
        self.join_mode = 'aligned'
        self._prefixes = None
        self.stats.rtc_fallback = True
        self._say(fallback_message(ticket, self.smooth_seam, self.seam_blend))

    def _say(self, message: str) -> None:
        self.warnings.append(message)
        if self._warn:
            warnings.warn(message, RuntimeWarning, stacklevel=4)

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
        jump = gap(first, last)
        previous = self.stats.max_seam_jump
        self.stats.max_seam_jump = jump if previous is None else max(previous, jump)
        if self.smooth_seam <= 0 or first.rtc or not is_absolute_space(self.stats.action_space):
            return
        self.stats.blended_steps += blend_seam(first, self._plan, last, self.smooth_seam,
                                               self.seam_blend)

    def _check_configuration(self, chunk: ActionChunk) -> None:
        """Warn once, with the numbers, when this set-up cannot keep the arm moving."""
        if self._configuration_warned or not self.prefetch or len(self.latency) < 5:
            return
        message = configuration_warning(self.join_mode, self.max_inflight,
                                        self.latency.q(0.99) or 0.0,
                                        len(chunk.steps) * self.period, self.aligned_delay())
        if message:
            self._configuration_warned = True
            self._say(message)
