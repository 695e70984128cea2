"""
RunLoop: Policy.run()'s control loop, drift-free pacing around ActionStream.step.

The loop owns what a robot sees from run(): when act() is called, and what happens when the
plan runs dry.
"""

from collections.abc import Callable
from dataclasses import asdict
import time
from typing import Any

from .engine import report
from .errors import Unavailable
from .outcome import RunOutcome
from .stream import ActionStream
from .types import Observation


class RunLoop:
    """run()'s loop: drift-free pacing against absolute deadlines around ActionStream.step."""

    def __init__(self, stream: ActionStream,
                 observe: Callable[[], Observation], act: Callable[[list[float]], Any],
                 validate: Callable[[list[float]], bool] | None,
                 on_underrun: Callable[[float], Any] | None, max_actions: int,
                 startup_timeout_s: float) -> None:
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
        """Play up to max_actions; return on completion or a failed validate, else raise."""
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
        """Fill in the RunOutcome from the engine (also after a raise)."""
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
