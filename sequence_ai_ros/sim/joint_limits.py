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

The simulated arm steps its physics at joint_state_rate_hz, usually slower than the update
rate: each physics step runs the updates it spans. A controller that writes a new value once
(forward_command_controller: the message's value, from the update it arrives in) holds it over
those updates; one that samples a trajectory (joint_trajectory_controller) would have written
values along the way, so its command is ramped from the last one.
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
    """Per-joint limiter state: the last limited position command and velocity state."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray, update_period: float) -> None:
        """Limit commands to [lower, upper] (per joint), `update_period` s per update."""
        if not update_period > 0:
            raise ValueError(f'update_period must be > 0, got {update_period!r}')
        self.lower = np.asarray(lower, dtype=float)
        self.upper = np.asarray(upper, dtype=float)
        self.update_period = update_period
        self._previous = np.full(self.lower.shape, np.nan)  # last limited position command
        self._last_command = np.full(self.lower.shape, np.nan)  # the controller's, unlimited
        self._velocity = np.zeros(self.lower.shape)  # GenericSystem's velocity state
        self.clamped_steps = 0  # physics steps in which an update clamped a command
        self._period = update_period
        # The positions after each update of the last call, one row per update.
        self.trace = np.zeros((0, self.lower.size))

    def updates(self, dt: float) -> tuple[int, float]:
        """Return (updates in a physics step of `dt` s, the period of each): at least one."""
        count = max(1, round(dt / self.update_period))
        return count, dt / count

    def forget(self, idx: np.ndarray | None = None) -> None:
        """Start the joints afresh (a hold, no command): the next limit is from the measured."""
        idx = slice(None) if idx is None else idx
        self._previous[idx] = np.nan
        self._last_command[idx] = np.nan
        self._velocity[idx] = 0.0

    def positions(self, idx: np.ndarray, commands: list[np.ndarray], actual: np.ndarray,
                  velocity: np.ndarray, limits: np.ndarray) -> tuple[np.ndarray, Clamp | None]:
        """
        Run the updates of one physics step on position commands; return (position, clamp).

        `commands` holds what the controller wrote in each update (see :meth:`schedule`);
        `limits` are the joints' speed limits.
        """
        period = self._period
        reach = limits * period
        previous = np.where(np.isnan(self._previous[idx]), actual, self._previous[idx])
        clamp, trace = None, []
        for wanted in commands:
            limited = np.clip(np.clip(wanted, previous - reach, previous + reach),
                              self.lower[idx], self.upper[idx])
            if clamp is None:
                clamp = self._first_clamp(idx, 'position', actual, velocity, wanted, limited)
            previous = limited
            trace.append(limited)
        self.trace = np.array(trace)
        self._previous[idx] = previous
        self._last_command[idx] = commands[-1]
        return previous, clamp

    def schedule(self, idx: np.ndarray, command: np.ndarray, actual: np.ndarray, began: float,
                 dt: float, arrivals: list[tuple[float, np.ndarray]] | None
                 ) -> list[np.ndarray]:
        """
        Return what a controller wrote in each update of the physics step from `began`.

        `arrivals` (a forward controller: each message at its time, then held) or None (a
        trajectory controller: ramped from its last command, or `actual`, to `command`).
        """
        count, self._period = self.updates(dt)
        last = self._last_command[idx]
        if arrivals is None:
            start = np.where(np.isnan(last), actual, last)
            return [start + (command - start) * (k / count) for k in range(1, count + 1)]
        written = np.where(np.isnan(last), command, last)
        out, pending = [], list(arrivals)
        for k in range(1, count + 1):
            while pending and pending[0][0] <= began + k * self._period:
                written = pending.pop(0)[1]
            out.append(written)
        return out if not pending else out[:-1] + [command]

    def velocities(self, idx: np.ndarray, command: np.ndarray, actual: np.ndarray,
                   limits: np.ndarray, dt: float) -> tuple[np.ndarray, Clamp | None]:
        """
        Run the updates of one physics step on a velocity command; return (position, clamp).

        The hardware integrates as mock_components/GenericSystem does with calculate_dynamics:
        each update the position moves by the velocity *state* times the period, then the
        state takes the (limited) command (backward integration: one update behind).
        """
        count, period = self.updates(dt)
        position, state = actual.astype(float), self._velocity[idx]
        clamp, trace = None, []
        for _ in range(count):
            position = position + state * period
            low = np.maximum(-limits, (self.lower[idx] - position) / period)
            high = np.minimum(limits, (self.upper[idx] - position) / period)
            limited = np.clip(command, low, np.maximum(low, high))
            if clamp is None:
                clamp = self._first_clamp(idx, 'velocity', actual, state, command, limited)
            state = limited
            trace.append(position)
        self.trace = np.array(trace)
        self._velocity[idx] = state
        self._previous[idx] = np.nan
        return position, clamp

    def _first_clamp(self, idx: np.ndarray, kind: str, actual: np.ndarray,
                     velocity: np.ndarray, wanted: np.ndarray, limited: np.ndarray
                     ) -> Clamp | None:
        over = np.flatnonzero(np.abs(limited - wanted) > TOLERANCE)
        if over.size == 0:
            return None
        self.clamped_steps += 1
        j = int(over[0])
        return Clamp(int(idx[j]), kind, float(actual[j]), float(velocity[j]), float(wanted[j]),
                     float(limited[j]), self.update_period)
