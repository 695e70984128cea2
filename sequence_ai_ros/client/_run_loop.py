"""
RunLoop: Policy.run()'s control loop, drift-free pacing around ActionStream.step.

The loop owns what a robot sees from run(): when act() is called, and what it is told when
the plan runs dry (an underrun) and when the loop stops.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass
import time
from typing import Any

from ._errors import Unavailable
from ._outcome import RunOutcome
from ._playback import PlaybackOptions
from ._stream import ActionStream
from ._types import Observation


@dataclass(frozen=True)
class RunCallbacks:
    """What run() reaches the robot through; Policy.run's docstring says when each is called."""

    observe: Callable[[], Observation]
    act: Callable[[list[float]], Any]
    validate: Callable[[list[float]], bool] | None = None
    hold: Callable[[], Any] | None = None
    on_underrun: Callable[[float], Any] | None = None
    on_underrun_start: Callable[[], Any] | None = None
    hold_on_underrun: bool = True
    # Told why, after each hold (run(record=) records it).
    on_hold: Callable[[str], Any] | None = None


class RunLoop:
    """run()'s loop: drift-free pacing against absolute deadlines around ActionStream.step."""

    def __init__(self, stream: ActionStream, callbacks: RunCallbacks, max_actions: int,
                 playback: PlaybackOptions) -> None:
        self.stream = stream
        self.calls = callbacks
        self.max_actions = max_actions
        self.startup_timeout_s = playback.startup_timeout_s
        self.reason = 'completed'
        self.acted = 0
        self.holds = 0
        self._starved = False  # inside an underrun whose start the robot has been told of
        self.began = time.monotonic()
        self._since = stream.interrupt.generation  # an interrupt() from here on ends the run
        self.outcome = RunOutcome(actions=0, chunks=0, elapsed_s=0.0)

    def run(self) -> None:
        """Play up to max_actions; return on completion or a failed validate, else raise."""
        calls = self.calls
        self._first_chunk()
        deadline: float | None = None
        stats = self.stream.stats
        while stats.actions < self.max_actions:
            now = time.monotonic()
            room = self.stream.needs_more(stats.actions, self.max_actions)
            step = self.stream.step(now, calls.observe, allow_request=room)
            if step is None:
                self._underrun_begins()
                self._refill()
                deadline = None  # pacing restarts from the moment motion resumes
                continue
            self._starved = False
            finished = self.stream.pop_finished_underrun()
            if finished is not None and calls.on_underrun is not None:
                calls.on_underrun(finished)
            if calls.validate is not None and not calls.validate(step.values):
                self.reason = 'validate'
                return
            calls.act(step.values)
            self.acted += 1
            period = self.stream.period
            deadline = (time.monotonic() if deadline is None else deadline) + period
            delay = deadline - time.monotonic()
            if delay > 0:
                self.stream.pause(delay, self._since)
            elif delay < -period:
                deadline = time.monotonic()  # far behind: do not burst to catch up

    def finish(self) -> None:
        """Hold once if the loop stopped early (never on completion), then fill the outcome."""
        try:
            if self.reason != 'completed':
                self._hold(self.reason)
        finally:
            self._outcome_ready()

    def _underrun_begins(self) -> None:
        """Tell the robot at the tick its next action is missing, not when the plan refills."""
        # The engine's rule: an empty plan is an underrun only once something has moved.
        if self._starved or not self.stream.stats.actions:
            return
        self._starved = True
        if self.calls.hold_on_underrun:
            self._hold('underrun')  # before the hook: stopping the arm must not wait on a log
        if self.calls.on_underrun_start is not None:
            self.calls.on_underrun_start()

    def _hold(self, reason: str) -> None:
        if self.calls.hold is not None:
            self.holds += 1
            self.calls.hold()
            if self.calls.on_hold is not None:
                self.calls.on_hold(reason)

    def _refill(self) -> None:
        """Refill a dry plan: wait for a request in flight, or make one (refill-when-empty)."""
        if self.stream.inflight:
            self.stream.wait()
            return
        self.stream.pause(self.stream.retry_delay(time.monotonic()), self._since)
        self.stream.start(self.calls.observe(), time.monotonic())
        self.stream.wait()

    def _first_chunk(self) -> None:
        """Get the first chunk, waiting out a warming worker only here, before anything moves."""
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            self.stream.pause(self.stream.retry_delay(time.monotonic()), self._since)
            captured = time.monotonic()
            self.stream.start(self.calls.observe(), captured)
            self.stream.wait()
            try:
                if self.stream.collect():
                    return
            except Unavailable as exc:
                if not ((exc.warming or exc.queued) and self.startup_timeout_s > 0):
                    raise
                pause = max(1.0, exc.retry_after_s if exc.retry_after_s is not None else 5.0)
                if time.monotonic() + pause > deadline:
                    raise Unavailable(
                        f'{exc.message}; still warming after {self.startup_timeout_s:.0f}s '
                        '(startup_timeout_s)', warming=True, job_id=exc.job_id,
                        **exc.fields()) from exc
                self.stream.pause(pause, self._since)

    def _outcome_ready(self) -> None:
        """Fill in the RunOutcome from the engine (also after a raise)."""
        now = time.monotonic()
        self.stream.close_underrun(now)
        out = self.outcome
        for name, value in asdict(self.stream.report(self.acted)).items():
            setattr(out, name, value)
        out.actions = self.acted
        out.holds = self.holds
        out.elapsed_s = now - self.began
        out.stopped_early = self.reason != 'completed'
        out.reason = self.reason
        out.requests_per_s = out.requests / out.elapsed_s if out.elapsed_s > 0 else 0.0
