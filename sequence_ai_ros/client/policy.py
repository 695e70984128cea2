"""
Policy: one model, one kept-alive connection, three ways to drive it.

predict(obs)        the whole chunk; you do everything
next_action(obs)    we hold the buffer (and prefetch), you own the cadence
run(observe, act)   we own the loop
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
import threading
import time
from typing import Any
import warnings

from .engine import ChunkEngine, report
from .errors import ChunkExhausted, PolicyBusy, PolicyClosed, Unavailable
from .latency import LatencyWindow
from .outcome import RunOutcome
from .stream import ActionStream
from .transport import Transport
from .types import Model, Observation, Prediction

_validate_warning_lock = threading.Lock()
_validate_warned = False


def _warn_no_validate() -> None:
    global _validate_warned
    with _validate_warning_lock:
        if _validate_warned:
            return
        _validate_warned = True
    warnings.warn('run() called with validate=None: actions go to act() with no safety check. '
                  'An action is model output, not a safe robot command.', UserWarning,
                  stacklevel=4)


class Policy:
    """A handle on one model over one open connection. Get it from connect(); use `with`."""

    def __init__(self, transport: Transport, model: str,
                 control_hz: float | None = None) -> None:
        if control_hz is not None and not control_hz > 0:
            raise ValueError('control_hz must be a positive rate')
        self._transport = transport
        self._model = model
        self._control_hz = control_hz
        self._closed = False
        # RLock so the same thread may re-enter (next_action -> predict); another thread may not.
        self._drive_lock = threading.RLock()
        self._stream: ActionStream | None = None
        self._latency = LatencyWindow()

    def __repr__(self) -> str:
        state = 'closed' if self._closed else 'open'
        return f'Policy(model={self._model!r}, {self._transport!r}, {state})'

    @property
    def model(self) -> str:
        """Return the full model id."""
        return self._model

    @property
    def buffered(self) -> int:
        """Actions left in next_action()'s buffer."""
        return self._stream.engine.buffered if self._stream else 0

    def describe(self) -> Model | None:
        """Return the model's catalogue entry (GET /v1/models on this connection), or None."""
        self._assert_open()
        rows = self._transport.get('/v1/models').get('data')
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and row.get('id') == self._model:
                return Model.from_wire(row)
        return None

    # -- the one request ----------------------------------------------------------------------

    def send(self, observation: Observation, options: dict[str, Any]) -> Prediction:
        """One POST /v1/act; touches no buffer state, so worker threads may call it."""
        if not isinstance(observation, Observation):
            raise TypeError(
                f'observation must be an Observation, got {type(observation).__name__}')
        payload: dict[str, Any] = {'model': self._model, 'observation': observation.to_wire()}
        payload.update({k: v for k, v in options.items() if v is not None})
        return Prediction.from_wire(self._transport.post('/v1/act', payload))

    @contextmanager
    def _driving(self, what: str) -> Iterator[None]:
        self._assert_open()
        if not self._drive_lock.acquire(blocking=False):
            raise PolicyBusy(
                f'this Policy is being driven by another thread; {what}() cannot run on the '
                'same handle at once, because two loops on one action buffer interleave each '
                "other's plans. Open one Policy per control loop with connect(): the handshake "
                'is paid once per Policy.')
        try:
            yield
        finally:
            self._drive_lock.release()

    def new_stream(self, *, join: str = 'append', prefetch: bool = True, max_inflight: int = 2,
                   smooth_seam: int = 0, seam_blend: str = 'linear',
                   on_chunk: Callable[[Prediction], Any] | None = None,
                   clock: Callable[[], float] = time.monotonic, retries: int = 2,
                   retry_backoff_s: float = 0.25, **options: Any) -> ActionStream:
        """
        Make an ActionStream on this Policy's connection.

        For drivers with their own clock (ROS).
        """
        self._assert_open()
        engine = ChunkEngine(join=join, prefetch=prefetch, max_inflight=max_inflight,
                             control_hz=self._control_hz, smooth_seam=smooth_seam,
                             blend=seam_blend, latency=self._latency)
        return ActionStream(self.send, engine, options=options, clock=clock, on_chunk=on_chunk,
                            retries=retries, retry_backoff_s=retry_backoff_s)

    # -- you do everything ------------------------------------------------------------------

    def predict(self, observation: Observation, **options: Any) -> Prediction:
        """
        One inference; the chunk also becomes next_action()'s buffer.

        `options` pass through to the request body (action_horizon, seed, ...). What comes back
        is model output, not a safe robot command.
        """
        with self._driving('predict'):
            stream = self._buffer_stream()
            captured = time.monotonic()
            ticket = stream.engine.request_started(captured)
            try:
                prediction = self.send(observation, options)
            except BaseException:
                stream.engine.request_failed(ticket)
                raise
            stream.engine.chunk_arrived(ticket, prediction.action_chunk, time.monotonic(),
                                        replace=True)
            return prediction

    # -- we hold the buffer, you drive --------------------------------------------------------

    def next_action(self, observation: Observation | None = None,
                    **options: Any) -> list[float]:
        """
        Return the next action, refilling when the buffer runs dry; never None.

        Pass `observation` on every call: it starts a background refill when the buffered time
        drops below the measured latency (so the buffer rarely runs dry), and is what a refill
        of an empty buffer is computed from. With an empty buffer and no observation it raises
        ChunkExhausted.
        """
        with self._driving('next_action'):
            stream = self._buffer_stream()
            stream.set_options(**options)
            now = time.monotonic()
            stream.collect()
            if observation is not None and stream.engine.buffered and \
                    stream.engine.should_request(now):
                stream.start(observation, now)
            step = stream.engine.next_action(now)
            while step is None:
                if stream.inflight:
                    stream.wait()
                    stream.collect()
                elif observation is not None:
                    self.predict(observation, **options)
                else:
                    raise ChunkExhausted('the action buffer is empty and no observation was '
                                         'given to refill from; pass observation= every call')
                step = stream.engine.next_action(time.monotonic())
            return step.values

    def _buffer_stream(self) -> ActionStream:
        if self._stream is None:
            self._stream = self.new_stream(max_inflight=1)
        return self._stream

    # -- we drive -------------------------------------------------------------------------

    def run(self, observe: Callable[[], Observation], act: Callable[[list[float]], Any], *,
            max_actions: int, validate: Callable[[list[float]], bool] | None = None,
            hold: Callable[[], Any] | None = None,
            on_chunk: Callable[[Prediction], Any] | None = None,
            on_underrun: Callable[[float], Any] | None = None, prefetch: bool = True,
            startup_timeout_s: float = 0.0, smooth_seam: int = 0, join: str = 'append',
            max_inflight: int = 2, seam_blend: str = 'linear', retries: int = 2,
            retry_backoff_s: float = 0.25, **options: Any) -> RunOutcome:
        """
        Run a bounded control loop and report what happened.

        observe      returns the current Observation; called on this thread only
        act          called once per action, on this thread, paced at the chunk's rate
        validate     called before every act; False stops the loop (None warns once)
        hold         called once if the loop stops early for any reason, never on completion
        on_chunk     called with each Prediction joined into the plan
        on_underrun  called with the seconds the arm went without a command
        prefetch     request the next chunk while this one plays (False: refill when empty)
        startup_timeout_s  wait out a warming worker, but only before the first action
        smooth_seam  ramp N steps of each new chunk out of the last action (absolute spaces)
        join         'append' (the seed's), 'aligned' (step i at capture + i/hz) or 'rtc' (RTC)
        max_inflight requests allowed in flight when latency says one is not enough
        seam_blend   'linear' (the seed's ramp) or 'min_jerk'
        retries      transient failures (connection lost, timeout, 5xx, malformed answer)
                     absorbed in a row while the plan keeps playing; the next one is raised
        retry_backoff_s  pause before the first retry, doubled for each further one
        """
        if isinstance(max_actions, bool) or not isinstance(max_actions, int) or max_actions <= 0:
            raise ValueError('max_actions must be a positive integer')
        if startup_timeout_s < 0:
            raise ValueError('startup_timeout_s must be >= 0')
        with self._driving('run'):
            if validate is None:
                _warn_no_validate()
            stream = self.new_stream(join=join, prefetch=prefetch, max_inflight=max_inflight,
                                     smooth_seam=smooth_seam, seam_blend=seam_blend,
                                     on_chunk=on_chunk, retries=retries,
                                     retry_backoff_s=retry_backoff_s, **options)
            loop = _RunLoop(self, stream, observe, act, validate, on_underrun, max_actions,
                            startup_timeout_s)
            try:
                loop.run()
            except BaseException as exc:
                loop.reason = f'raised:{type(exc).__name__}'
                raise
            finally:
                stream.close(wait_for_inflight=False)
                if loop.reason != 'completed' and hold is not None:
                    hold()
                loop.outcome_ready()
            return loop.outcome

    # -- lifetime ---------------------------------------------------------------------------

    def _assert_open(self) -> None:
        if self._closed:
            raise PolicyClosed('this Policy is closed; open a new one with connect()')

    def close(self) -> None:
        """Close the connection, draining a request in flight. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._stream is not None:
            self._stream.close(wait_for_inflight=True)
        self._transport.close()

    def __enter__(self) -> 'Policy':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _RunLoop:
    """run()'s loop: drift-free pacing against absolute deadlines around ActionStream.step."""

    def __init__(self, policy: Policy, stream: ActionStream,
                 observe: Callable[[], Observation], act: Callable[[list[float]], Any],
                 validate: Callable[[list[float]], bool] | None,
                 on_underrun: Callable[[float], Any] | None, max_actions: int,
                 startup_timeout_s: float) -> None:
        self.policy = policy
        self.stream = stream
        self.engine = stream.engine
        self.observe = observe
        self.act = act
        self.validate = validate
        self.on_underrun = on_underrun
        self.max_actions = max_actions
        self.startup_timeout_s = startup_timeout_s
        self.reason = 'completed'
        self.acted = 0
        self.began = time.monotonic()
        self.outcome = RunOutcome(actions=0, chunks=0, elapsed_s=0.0)

    def run(self) -> None:
        self._first_chunk()
        deadline: float | None = None
        while self.engine.stats.actions < self.max_actions:
            now = time.monotonic()
            room = self.engine.stats.actions + self.engine.committed_steps() < self.max_actions
            step = self.stream.step(now, self.observe, allow_request=room)
            if step is None:
                self._refill()
                deadline = None  # pacing restarts from the moment motion resumes
                continue
            finished = self.engine.pop_finished_underrun()
            if finished is not None and self.on_underrun is not None:
                self.on_underrun(finished)
            if self.validate is not None and not self.validate(step.values):
                self.reason = 'validate'
                return
            self.act(step.values)
            self.acted += 1
            deadline = (time.monotonic() if deadline is None else deadline) + self.engine.period
            delay = deadline - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -self.engine.period:
                deadline = time.monotonic()  # far behind: do not burst to catch up

    def _refill(self) -> None:
        """Refill a dry plan: wait for a request in flight, or make one (refill-when-empty)."""
        if self.stream.inflight:
            self.stream.wait()
            return
        time.sleep(self.stream.retry_delay(time.monotonic()))
        self.stream.start(self.observe(), time.monotonic())
        self.stream.wait()

    def _first_chunk(self) -> None:
        """Get the first chunk, waiting out a warming worker only here, before anything moves."""
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            time.sleep(self.stream.retry_delay(time.monotonic()))
            captured = time.monotonic()
            self.stream.start(self.observe(), captured)
            self.stream.wait()
            try:
                if self.stream.collect():
                    return
            except Unavailable as exc:
                if not (exc.warming and self.startup_timeout_s > 0):
                    raise
                pause = max(1.0, exc.retry_after_s if exc.retry_after_s is not None else 5.0)
                if time.monotonic() + pause > deadline:
                    raise Unavailable(
                        f'{exc.message}; still warming after {self.startup_timeout_s:.0f}s '
                        '(startup_timeout_s)', status=exc.status, body=exc.body, warming=True,
                        retry_after_s=exc.retry_after_s, job_id=exc.job_id) from exc
                time.sleep(pause)

    def outcome_ready(self) -> None:
        now = time.monotonic()
        self.engine.close_underrun(now)
        out = self.outcome
        for name, value in asdict(report(self.engine, self.acted)).items():
            setattr(out, name, value)
        out.actions = self.acted
        out.elapsed_s = now - self.began
        out.stopped_early = self.reason != 'completed'
        out.reason = self.reason
        out.requests_per_s = out.requests / out.elapsed_s if out.elapsed_s > 0 else 0.0
