"""
Policy: one model, one kept-alive connection, three ways to drive it.

predict(obs)        the whole chunk; you do everything
next_action(obs)    we hold the buffer (and prefetch), you own the cadence
run(observe, act)   we own the loop

On either protocol: `v1` posts each observation to the gateway's /v1/act; `direct` connects
at the gateway and observes and acts at the worker (_direct.py). `auto` asks for the direct
protocol and falls back to v1 only when the gateway has none.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
import threading
import time
from typing import Any
import warnings
import weakref

from ._direct import DirectConnection
from ._errors import ChunkExhausted, Interrupted, PolicyBusy, PolicyClosed, SequencesError
from ._interrupt import InterruptSignal
from ._latency import LatencyWindow
from ._observer import ObserverList, PolicyObserver
from ._outcome import RunOutcome
from ._playback import DEFAULT_PLAYBACK, PlaybackOptions
from ._policy_direct import DirectMethods, PROTOCOLS
from ._run_loop import RunCallbacks, RunLoop
from ._stream import ActionStream
from ._transport import Transport
from ._types import Model, Observation, Prediction

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


class Policy(DirectMethods):
    """A handle on one model over one open connection. Get it from connect(); use `with`."""

    def __init__(self, transport: Transport, model: str, control_hz: float | None = None,
                 observer: PolicyObserver | None = None, *, protocol: str = 'v1',
                 direct: DirectConnection | None = None) -> None:
        if control_hz is not None and not control_hz > 0:
            raise ValueError('control_hz must be a positive rate')
        if protocol not in PROTOCOLS:
            raise ValueError(f'protocol must be one of {", ".join(PROTOCOLS)}')
        if protocol != 'v1' and direct is None:
            raise ValueError(f'protocol={protocol!r} needs a DirectConnection')
        self._transport = transport
        self._model = model
        self._protocol = protocol
        self._direct = direct
        self._protocol_lock = threading.Lock()
        self._interrupt = direct._interrupt if direct is not None else InterruptSignal()
        if direct is not None:  # a Policy dropped unclosed still gives its seat back
            weakref.finalize(self, direct.close)
        # The published client's keyword, under the node's name from here on.
        self._control_rate_hz = control_hz
        self._closed = False
        # RLock so the same thread may re-enter (next_action -> predict); another thread may not.
        self._drive_lock = threading.RLock()
        self._stream: ActionStream | None = None
        self._latency = LatencyWindow()
        self._observer = ObserverList(*([observer] if observer is not None else []))

    def __repr__(self) -> str:
        state = 'closed' if self._closed else 'open'
        return (f'Policy(model={self._model!r}, protocol={self._protocol!r}, '
                f'{self._transport!r}, {state})')

    @property
    def model(self) -> str:
        """Return the full model id."""
        return self._model

    @property
    def buffered(self) -> int:
        """Actions left in next_action()'s buffer."""
        return self._stream.buffered if self._stream else 0

    def describe(self) -> Model | None:
        """Return the model's catalogue entry (GET /v1/models on this connection), or None."""
        self._assert_open()
        rows = self._transport.get('/v1/models').get('data')
        for row in rows if isinstance(rows, list) else []:
            if isinstance(row, dict) and row.get('id') == self._model:
                return Model.from_wire(row)
        return None

    def add_observer(self, observer: PolicyObserver) -> None:
        """Tell `observer` of every request from now on too (beside the one from connect)."""
        self._observer.observers.append(observer)

    def remove_observer(self, observer: PolicyObserver) -> None:
        """Stop telling `observer` (added with add_observer); unknown ones are ignored."""
        if observer in self._observer.observers:
            self._observer.observers.remove(observer)

    # -- the one request ----------------------------------------------------------------------

    def send(self, observation: Observation, options: dict[str, Any]) -> Prediction:
        """One POST /v1/act; touches no buffer state, so worker threads may call it."""
        if not isinstance(observation, Observation):
            raise TypeError(
                f'observation must be an Observation, got {type(observation).__name__}')
        self._observer.request_sent(observation)
        began = time.monotonic()
        generation = self._interrupt.generation
        try:
            if self._settle_protocol() == 'direct':
                assert self._direct is not None
                prediction = self._direct.predict(observation, options)
            else:
                payload: dict[str, Any] = {'model': self._model,
                                           'observation': observation.to_wire()}
                payload.update({k: v for k, v in options.items() if v is not None})
                prediction = Prediction.from_wire(self._transport.post('/v1/act', payload))
        except BaseException as exc:
            if isinstance(exc, SequencesError) and not isinstance(exc, Interrupted) and \
                    self._interrupt.fired_since(generation):
                exc = Interrupted(f'the request was interrupted (interrupt()): {exc.message}')
            self._observer.request_failed(observation, exc)
            raise exc
        self._observer.answer_received(observation, prediction, time.monotonic() - began)
        return prediction

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

    def new_stream(self, playback: PlaybackOptions = DEFAULT_PLAYBACK, *,
                   on_chunk: Callable[[Prediction], Any] | None = None,
                   clock: Callable[[], float] = time.monotonic, **options: Any) -> ActionStream:
        """
        Make an ActionStream on this Policy's connection, playing as `playback` says.

        For drivers with their own clock (ROS). `options` go on every request's wire body.
        """
        self._assert_open()
        return ActionStream(self.send, playback, control_rate_hz=self._control_rate_hz,
                            latency=self._latency, options=options, clock=clock,
                            on_chunk=on_chunk, interrupt=self._interrupt)

    # -- you do everything ------------------------------------------------------------------

    def predict(self, observation: Observation, **options: Any) -> Prediction:
        """
        One inference; the chunk also becomes next_action()'s buffer.

        `options` pass through to the request body (action_horizon, seed, ...). What comes
        back is model output, not a safe robot command.
        """
        with self._driving('predict'):
            return self._buffer_stream().predict(observation, options)

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
            if observation is not None and stream.buffered and stream.should_request(now):
                stream.start(observation, now)
            step = stream.next_action(now)
            while step is None:
                if stream.inflight:
                    stream.wait()
                    stream.collect()
                elif observation is not None:
                    self.predict(observation, **options)
                else:
                    raise ChunkExhausted('the action buffer is empty and no observation was '
                                         'given to refill from; pass observation= every call')
                step = stream.next_action(time.monotonic())
            return step.values

    def _buffer_stream(self) -> ActionStream:
        if self._stream is None:
            self._stream = self.new_stream(DEFAULT_PLAYBACK.with_changes(max_inflight=1))
        return self._stream

    # -- we drive -------------------------------------------------------------------------

    def run(self, observe: Callable[[], Observation], act: Callable[[list[float]], Any], *,
            max_actions: int, validate: Callable[[list[float]], bool] | None = None,
            hold: Callable[[], Any] | None = None,
            on_chunk: Callable[[Prediction], Any] | None = None,
            on_underrun: Callable[[float], Any] | None = None,
            on_underrun_start: Callable[[], Any] | None = None, hold_on_underrun: bool = True,
            playback: PlaybackOptions | None = None, record: Any = None,
            **options: Any) -> RunOutcome:
        """
        Run a bounded control loop and report what happened.

        observe      returns the current Observation; called on this thread only
        act          called once per action, on this thread, paced at the chunk's rate
        validate     called before every act; False stops the loop (None warns once)
        hold         the robot's safe stop: called when an underrun begins (below), and once
                     if the loop stops early for any reason; never at a clean completion
        on_chunk     called with each Prediction joined into the plan
        on_underrun  called when an underrun ends, with its seconds, before the next act
        on_underrun_start  called (after hold) when an underrun begins
        hold_on_underrun   False: hold only when the loop stops early, as the sequence-ai
                     client does (the robot then gets nothing during an underrun but
                     on_underrun_start)
        playback     how chunks are requested, joined and played: a PlaybackOptions (its
                     docstring has the fields and defaults, shared with the ROS node); or
                     its fields as keywords (prefetch=False, join_mode='aligned', ...), as
                     the sequence-ai client takes some of them, but not both
        record       a path: record the run as an MCAP episode file there (a directory: a new
                     file in it), as the ROS node records; needs sequence_ai_ros[record]
        options      any other keyword goes on every request's wire body

        An underrun begins at the tick whose action is missing (the plan ran dry after the arm
        moved): hold(), then on_underrun_start(), each once. Nothing else reaches the robot
        while the loop waits (no act, no validate; observe only to build the next request).
        When a chunk joins, on_underrun(seconds) is called, then validate and act resume on
        its first action, paced from that moment. A wait that ends in the error after the
        retries is raised, after hold() is called once more (the loop stopped early).
        """
        if isinstance(max_actions, bool) or not isinstance(max_actions, int) or max_actions <= 0:
            raise ValueError('max_actions must be a positive integer')
        playback, options = PlaybackOptions.from_keywords(playback, options)
        if not isinstance(hold_on_underrun, bool):
            raise TypeError('hold_on_underrun must be True or False (pass the callable as hold=)')
        with self._driving('run'):
            if validate is None:
                _warn_no_validate()
            recording: Any = None
            if record is not None:
                # Imported here: the client needs only httpx unless a run records.
                from sequence_ai_ros.record.run_recording import RunRecording
                recording = RunRecording.start(record, self._model, playback, options,
                                               max_actions)
                on_chunk = recording.on_chunk(on_chunk)
                self.add_observer(recording.observer)
            stream = self.new_stream(playback, on_chunk=on_chunk, **options)
            calls = RunCallbacks(observe, act, validate, hold, on_underrun, on_underrun_start,
                                 hold_on_underrun)
            if recording is not None:
                recording.stream = stream
                calls = recording.wrap(calls)
            loop = RunLoop(stream, calls, max_actions, playback)
            own_episode = self._direct is not None and self._direct.episodes.current is None
            if own_episode:
                self.begin_episode()
            try:
                loop.run()
            except BaseException as exc:
                loop.reason = f'raised:{type(exc).__name__}'
                raise
            finally:
                stream.close(wait_for_inflight=False)
                if own_episode:
                    self.end_episode()
                loop.finish()
                if recording is not None:
                    self.remove_observer(recording.observer)
                    recording.finish(loop.outcome)
            return loop.outcome

    # -- lifetime ---------------------------------------------------------------------------

    def _assert_open(self) -> None:  # noqa: D102 (DirectMethods' too)
        if self._closed:
            raise PolicyClosed('this Policy is closed; open a new one with connect()')

    def close(self) -> None:
        """Close the connection, draining a request in flight. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._stream is not None:
            self._stream.close(wait_for_inflight=True)
        if self._direct is not None:
            self._direct.close()
        self._transport.close()

    def __enter__(self) -> 'Policy':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
