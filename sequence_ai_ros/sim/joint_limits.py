"""
The controller_manager's enforcement of the joints' limits on commands, ROS-free.

ros2_control's resource manager (controller_manager 5.x, Kilted, where `enforce_command_limits`
is on by default; Jazzy's 4.x declares it off by default, Humble has none) clamps every command
a controller writes before the hardware reads it, once per update (the saturation limiter's
rules, ros-controls/ros2_control joint_limits/src/joint_limits_helpers.cpp,
compute_position_limits and compute_velocity_limits; no lines cited, the stored versions come
without a commit):

- a position command stays inside the position limits and within max_velocity x period of
  the previous *limited* command (the measured position before the first one): a step a
  controller writes in one update is spread over as many updates as the speed limit needs;
- a velocity command stays within +-max_velocity, and within what keeps one period at it
  inside the position limits.

Each update that clamps anything is logged at ERROR, throttled (the real one said, with a
position step a forward_command_controller had written at once: "Command of at least one
joint is out of limits (throttled log). Joint: 'panda_joint1', (actual: ... position:
0.000000, velocity: 0.000000], command: ... position: -0.003692], limited: ... position:
-0.002175]) with desired period : 0.001000 sec."; the parts shown as "..." are not known here).

The hardware loop (hardware.py) runs the updates one by one and asks for each command's
limits in the update the controller wrote it, with that update's measured period.
"""

from dataclasses import dataclass

import numpy as np

OUT_OF_LIMITS = (
    "Command of at least one joint is out of limits (throttled log). Joint: '{joint}', "
    '(actual: [position: {actual:.6f}, velocity: {velocity:.6f}], command: [{kind}: '
    '{command:.6f}], limited: [{kind}: {limited:.6f}]) with desired period : {period:.6f} sec.')
# A clamp smaller than this is floating-point noise, not a command out of limits.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Clamp:
    """
    The first joint an update clamped: what it measured, was told and was given.

    `period` is the nominal update period (the real line's "desired period").
    """

    joint: int
    kind: str
    actual: float
    velocity: float
    command: float
    limited: float
    period: float

    def line(self, names: tuple[str, ...]) -> str:
        """Return the controller_manager's error line for this clamp."""
        return OUT_OF_LIMITS.format(joint=names[self.joint], kind=self.kind,
                                    actual=self.actual, velocity=self.velocity,
                                    command=self.command, limited=self.limited,
                                    period=self.period)


class JointLimiter:
    """Per-joint limiter state: the last limited position command."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray, update_period: float) -> None:
        """Limit commands to [lower, upper] (per joint); `update_period` is the nominal one."""
        if not update_period > 0:
            raise ValueError(f'update_period must be > 0, got {update_period!r}')
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.update_period = update_period
        self._previous = np.full(self.lower.shape, np.nan)  # last limited position command
        self.clamped_updates = 0

    def forget(self, idx: np.ndarray | None = None) -> None:
        """Start the joints afresh (a hold, no command): the next limit is from the measured."""
        self._previous[slice(None) if idx is None else idx] = np.nan

    def position(self, idx: np.ndarray, command: np.ndarray, actual: np.ndarray,
                 velocity: np.ndarray, limits: np.ndarray, period: float
                 ) -> tuple[np.ndarray, Clamp | None]:
        """
        Limit one update's position command; return (limited, the clamp if any).

        Within `limits` (the joints' speeds) x `period` of the last limited command (of
        `actual` before the first) and inside the position limits.
        """
        reach = limits * period
        previous = np.where(np.isnan(self._previous[idx]), actual, self._previous[idx])
        limited = np.clip(np.clip(command, previous - reach, previous + reach),
                          self.lower[idx], self.upper[idx])
        self._previous[idx] = limited
        return limited, self._clamp(idx, 'position', actual, velocity, command, limited)

    def velocity(self, idx: np.ndarray, command: np.ndarray, actual: np.ndarray,
                 velocity: np.ndarray, limits: np.ndarray, period: float
                 ) -> tuple[np.ndarray, Clamp | None]:
        """
        Limit one update's velocity command; return (limited, the clamp if any).

        Within +-`limits`, and no faster than keeps one `period` at it inside the position
        limits.
        """
        low = np.maximum(-limits, (self.lower[idx] - actual) / period)
        high = np.minimum(limits, (self.upper[idx] - actual) / period)
        limited = np.clip(command, low, np.maximum(low, high))
        self._previous[idx] = np.nan
        return limited, self._clamp(idx, 'velocity', actual, velocity, command, limited)

    def _clamp(self, idx: np.ndarray, kind: str, actual: np.ndarray, velocity: np.ndarray,
               wanted: np.ndarray, limited: np.ndarray) -> Clamp | None:
        over = np.flatnonzero(np.abs(limited - wanted) > TOLERANCE)
        if over.size == 0:
            return None
        self.clamped_updates += 1
        j = int(over[0])
        return Clamp(int(idx[j]), kind, float(actual[j]), float(velocity[j]), float(wanted[j]),
                     float(limited[j]), self.update_period)
