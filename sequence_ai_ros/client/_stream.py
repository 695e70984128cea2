"""
ActionStream: the chunk engine plus the requests in flight, as one non-blocking step.

Policy.run() calls `step()` from a sleep loop and the ROS node calls it from a timer. The HTTP
calls run on worker threads; chunks are joined into the engine only on the driver's thread,
so the engine needs no lock and the order of events is the driver's.
"""

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
import threading
import time
from typing import Any, Union

from ._engine import ChunkEngine
from ._engine_stats import EngineReport, EngineStats, report
from ._errors import is_transient, SequencesError
from ._interrupt import InterruptSignal
from ._latency import LatencyWindow
from ._plan import PlannedStep
from ._playback import DEFAULT_PLAYBACK, PlaybackOptions
from ._types import Observation, Prediction

ObservationSource = Union[Observation, Callable[[], Observation]]  # noqa: UP007 (3.10 alias)
Sender = Callable[[Observation, dict[str, Any]], Prediction]


class ActionStream:
    """
    Drive its own ChunkEngine against a sender with up to `max_inflight` requests in flight.

    The engine plays as `playback` says, at `control_rate_hz` if given (else each chunk's
    rate), measuring latency into `latency` if given (a Policy shares one across its runs).

    `observe` passed to step() returns an Observation, or a zero-argument callable that builds
    one; a callable is built on the worker thread, which keeps image encoding off a control
    tick that only needs to snapshot its inputs.

    A transient failure (lost connection, timeout, 5xx, malformed answer: `is_transient`) is
    retried up to `playback.request_retries` times in a row, after a backoff of
    `playback.retry_backoff_s` doubling each time, while the plan already in hand keeps
    playing; the next failure is raised. Nothing of a failed request is ever played.
    """

    def __init__(self, send: Sender, playback: PlaybackOptions = DEFAULT_PLAYBACK, *,
                 control_rate_hz: float | None = None, latency: LatencyWindow | None = None,
                 options: dict[str, Any] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_chunk: Callable[[Prediction], Any] | None = None,
                 name: str = 'sequence-ai-request',
                 interrupt: InterruptSignal | None = None) -> None:
        engine = ChunkEngine(playback, control_rate_hz=control_rate_hz, latency=latency)
        self._engine = engine
        self._send = send
        self._options = dict(options or {})
        self._clock = clock
        self._on_chunk = on_chunk
        self._pool = ThreadPoolExecutor(max_workers=engine.max_inflight,
                                        thread_name_prefix=name)
        self._futures: dict[int, Future[Prediction]] = {}
        self._arrivals: dict[int, float] = {}
        self._lock = threading.Lock()
        self.last_prediction: Prediction | None = None
        self.request_retries = playback.request_retries
        self.retry_backoff_s = playback.retry_backoff_s
        self.retried = 0  # transient failures absorbed over the stream's life
        self.last_transient_error: SequencesError | None = None
        self._failures_in_a_row = 0
        self._retry_at = float('-inf')
        self._interrupt = interrupt or InterruptSignal()

    # -- what a driver reads of the plan (the engine stays the stream's own) --------------------

    @property
    def engine(self) -> ChunkEngine:
        """Return the engine, to read (a recording describes its joins); drivers use the stream."""
        return self._engine

    @property
    def period(self) -> float:
        """Seconds per action: the control rate set, else the last chunk's rate."""
        return self._engine.period

    @property
    def stats(self) -> EngineStats:
        """Return what the engine has counted so far (chunks, latencies, underruns, space)."""
        return self._engine.stats

    @property
    def action_space(self) -> str | None:
        """Return the action space of the chunks joined so far (None before the first)."""
        return self._engine.stats.action_space

    @property
    def buffered(self) -> int:
        """Count the actions left in the plan."""
        return self._engine.buffered

    def buffered_seconds(self, now: float) -> float:
        """Seconds of plan left to play at `now`."""
        return self._engine.buffered_seconds(now)

    def needs_more(self, played: int, max_actions: int) -> bool:
        """Whether a request is still wanted: played + committed actions < max_actions."""
        return played + self._engine.committed_steps() < max_actions

    def should_request(self, now: float) -> bool:
        """Whether the engine would start a request now (see step())."""
        return self._engine.should_request(now)

    def next_action(self, now: float) -> PlannedStep | None:
        """Play the plan's action for `now`, without collecting or requesting (see step())."""
        return self._engine.next_action(now)

    def pop_finished_underrun(self) -> float | None:
        """Seconds of the underrun the last action ended, once; else None."""
        return self._engine.pop_finished_underrun()

    def close_underrun(self, now: float) -> None:
        """End an open underrun at `now` (the driver is stopping while starved)."""
        self._engine.close_underrun(now)

    def report(self, commanded_actions: int) -> EngineReport:
        """Summarize the run so far for `commanded_actions` sent to the robot."""
        return report(self._engine, commanded_actions)

    def set_options(self, **options: Any) -> None:
        """Change the wire options (e.g. the instruction's extras) for the next requests."""
        self._options.update(options)

    def step(self, now: float, observe: Callable[[], ObservationSource],
             *, allow_request: bool = True) -> PlannedStep | None:
        """
        Join arrived chunks, start a request if the engine asks, and return the action.

        Raises the first failed request's error (typed SequencesError), after marking it.
        """
        self.collect()
        if allow_request and now >= self._retry_at and self._engine.should_request(now):
            self.start(observe(), now)
        if not self._engine.buffered and self.collect():
            pass  # a chunk landed since the first look: no underrun for a race of microseconds
        return self._engine.next_action(now)

    def upcoming(self, count: int) -> list[list[float]]:
        """Return the next `count` actions of the plan without playing them (a plan ahead)."""
        return self._engine.upcoming(count)

    def predict(self, observation: Observation, options: dict[str, Any]) -> Prediction:
        """Send one request now, on this thread, and make its chunk the whole plan."""
        ticket = self._engine.request_started(self._clock())
        generation = self._interrupt.generation
        try:
            future = self._pool.submit(self._send, observation, options)
            while not future.done():  # on a worker thread, so that interrupt() ends the wait
                wait([future], timeout=0.05)
                self._interrupt.check(generation, 'predict()')
            prediction = future.result()
        except BaseException:
            self._engine.request_failed(ticket)
            raise
        self._engine.chunk_arrived(ticket, prediction.action_chunk, self._clock(), replace=True)
        return prediction

    def start(self, source: ObservationSource, capture_time: float) -> int:
        """Send one request in the background for an observation captured at capture_time."""
        ticket = self._engine.request_started(capture_time)
        # The engine's own options (join='rtc': the prefix) go with the driver's.
        options = dict(self._options, **self._engine.request_options(ticket))
        future = self._pool.submit(self._call, source, options)

        def arrived(_: 'Future[Prediction]', ticket: int = ticket) -> None:
            with self._lock:
                self._arrivals[ticket] = self._clock()

        future.add_done_callback(arrived)
        self._futures[ticket] = future
        return ticket

    def collect(self) -> int:
        """Join every finished request into the engine in ticket order; returns chunks joined."""
        joined = 0
        for ticket in sorted(self._futures):
            future = self._futures[ticket]
            if not future.done():
                continue
            del self._futures[ticket]
            with self._lock:
                arrival = self._arrivals.pop(ticket, self._clock())
            error = future.exception()
            if error is not None:
                self._engine.request_failed(ticket)
                self._absorb_or_raise(error)
                continue
            self._failures_in_a_row = 0
            prediction = future.result()
            server_ms = prediction.perf.get('inference_ms')
            applied = self._engine.chunk_arrived(
                ticket, prediction.action_chunk, arrival,
                server_ms=server_ms if isinstance(server_ms, (int, float)) else None,
                prefix_report=prediction.rtc)
            if applied:
                joined += 1
                self.last_prediction = prediction
                if self._on_chunk is not None:
                    self._on_chunk(prediction)
        return joined

    def retry_delay(self, now: float) -> float:
        """Return how long until a request may start again after a transient failure (0: now)."""
        return max(0.0, self._retry_at - now)

    def _absorb_or_raise(self, error: BaseException) -> None:
        if not is_transient(error) or self._failures_in_a_row >= self.request_retries:
            self._failures_in_a_row = 0
            raise error
        self._failures_in_a_row += 1
        self.retried += 1
        self.last_transient_error = error  # type: ignore[assignment]  # is_transient: typed
        self._retry_at = self._clock() + self.retry_backoff_s * 2 ** (self._failures_in_a_row - 1)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a request in flight finishes; False if none is in flight or on timeout."""
        pending = [f for f in self._futures.values() if not f.done()]
        if not pending:
            return bool(self._futures)
        generation = self._interrupt.generation
        end = None if timeout is None else time.monotonic() + timeout
        while True:  # in slices, so that interrupt() ends the wait at once
            left = 0.05 if end is None else min(0.05, max(0.0, end - time.monotonic()))
            done, _ = wait(pending, timeout=left, return_when=FIRST_COMPLETED)
            self._interrupt.check(generation, 'the wait for an answer')
            if done or (end is not None and time.monotonic() >= end):
                return bool(done)

    @property
    def interrupt(self) -> InterruptSignal:
        """Return the InterruptSignal that cuts this stream's waits short."""
        return self._interrupt

    def pause(self, seconds: float, since: int | None = None) -> None:
        """Sleep `seconds`; an interrupt() meanwhile (or since `since`) raises Interrupted."""
        since = self._interrupt.generation if since is None else since
        self._interrupt.sleep(seconds, since, 'the run')

    @property
    def inflight(self) -> int:
        """Count the requests not yet joined."""
        return len(self._futures)

    def abandon(self) -> None:
        """Forget the requests in flight: their answers will be dropped, never played."""
        for ticket, future in self._futures.items():
            if future.cancel():  # still queued: its observation was never taken nor sent
                self._engine.request_withdrawn(ticket)
        self._futures.clear()
        self._engine.clear()

    def close(self, wait_for_inflight: bool = True) -> None:
        """Stop the workers, draining (default) or abandoning the requests in flight."""
        if not wait_for_inflight:
            self.abandon()
        self._pool.shutdown(wait=wait_for_inflight)

    def _call(self, source: ObservationSource, options: dict[str, Any]) -> Prediction:
        observation = source() if callable(source) else source
        return self._send(observation, options)
