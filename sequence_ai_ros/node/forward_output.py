"""
forward_position between the model's steps: each checked step reached along a straight line.

A forward_command_controller writes each message to the position interfaces in the one
controller update it arrives in (1 ms at 1 kHz). A model's step at its own rate (15 Hz: 8-20
mrad) is then a jump the joint cannot make in one update: a controller_manager that enforces
the joints' limits (Kilted's, by default) clamps it to the speed limit and logs "Command of at
least one joint is out of limits", and the arm moves in bursts (a jerk ~3x trajectory_plan's,
measured on the real one). With `forward_output_rate_hz` > 0 the node publishes instead, on a
timer of its own (the control tick only starts a segment), the straight line from the last
value published to the step, one value per 1/rate s, reaching the step one control period
after it was sent (as trajectory_stream's point is due), then nothing until the next step.

Every value published lies between two checked commands (the last published one and the new
step; the first of an episode starts at the measured positions): nothing is extrapolated, and
a late step leaves the arm at the last one. A hold stops the line at once.
"""

from collections.abc import Callable, Sequence
import time
from typing import Any

import numpy as np

from .arm_output import forward_message

__all__ = ['ForwardPositionOutput', 'Segment']


class Segment:
    """The straight line from `start` to `target` over `duration` s from `began`, ROS-free."""

    def __init__(self, start: Sequence[float], target: Sequence[float], began: float,
                 duration: float) -> None:
        """Make a segment of `duration` > 0 s; ValueError if the ends differ in size."""
        if len(start) != len(target):
            raise ValueError(f'a segment from {len(start)} values to {len(target)}')
        self.start = np.array(start, dtype=float)
        self.target = np.array(target, dtype=float)
        self.began = began
        self.duration = max(duration, 1e-6)

    def at(self, now: float) -> tuple[list[float], bool]:
        """Return (the value at `now`, whether the segment has ended); never past the target."""
        fraction = min(max((now - self.began) / self.duration, 0.0), 1.0)
        if fraction >= 1.0:
            return self.target.tolist(), True
        return (self.start + (self.target - self.start) * fraction).tolist(), False


class ForwardPositionOutput:
    """Publishes forward_position commands as interpolated values at `rate_hz`."""

    def __init__(self, node: Any, publish: Callable[[Any], None], rate_hz: float,
                 measured: Callable[[], Sequence[float] | None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        """Publish through `publish`; `measured` gives the arm's positions in message order."""
        self._node = node
        self._publish_message = publish
        self._measured = measured
        self._clock = clock
        self._segment: Segment | None = None
        self.last: list[float] | None = None
        self.published = 0
        self._timer = node.create_timer(1.0 / rate_hz, self._on_timer)
        self._timer.cancel()
        self._running = False

    def step(self, target: Sequence[float], period_s: float) -> None:
        """Go from where the line is now (the measured positions at first) to `target`."""
        now = self._clock()
        if self._segment is not None:
            start: Sequence[float] | None = self._segment.at(now)[0]
        else:
            start = self.last if self.last is not None else self._measured()
        if start is None or len(start) != len(target):
            self._publish(list(target))  # nothing to start from: the step as it is
            return
        self._segment = Segment(start, target, now, period_s)
        if not self._running:
            self._running = True
            self._timer.reset()

    def hold(self, positions: Sequence[float]) -> None:
        """Stop the line and publish `positions` now."""
        self._stop()
        self._publish(list(positions))

    def heading_to(self) -> list[float] | None:
        """Return the step the line is going to (None: no line)."""
        return None if self._segment is None else self._segment.target.tolist()

    def reset(self) -> None:
        """Forget the last value (a new episode starts from the measured positions)."""
        self._stop()
        self.last = None

    def close(self) -> None:
        """Stop and destroy the timer."""
        self._stop()
        if self._timer is not None:
            self._node.destroy_timer(self._timer)
            self._timer = None

    def _on_timer(self) -> None:
        segment = self._segment
        if segment is None:
            return  # at the last step, ticking on: the next line keeps the timer's phase
        value, ended = segment.at(self._clock())
        self._publish(value)
        if ended:
            self._segment = None

    def _stop(self) -> None:
        self._segment = None
        self._running = False
        if self._timer is not None:
            self._timer.cancel()

    def _publish(self, values: list[float]) -> None:
        self.last = values
        self.published += 1
        self._publish_message(forward_message(values))
