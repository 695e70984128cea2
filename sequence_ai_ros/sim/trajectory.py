"""
Trajectory execution as ros2_control's joint_trajectory_controller (JTC) does it, ROS-free.

Times are plain seconds on one clock the caller chooses (the node passes its ROS clock, the
clock `header.stamp` is written in); nothing here reads a clock, so tests inject time.

What JTC does and this copies: a new trajectory replaces the old one at once; a zero start time
means "at receipt"; the segment before the first point runs from the state at receipt (at the
receipt time) to point 0 (at start + its time_from_start), so a future start stretches that
segment rather than freezing the arm; between points cubic Hermite when both ends carry
velocities, linear otherwise; after the last point its positions are held; joints the message
does not name hold their position at receipt; an empty trajectory means stop; a stamped
trajectory that already ended is rejected, one that started in the past is joined where it is
now (points already due are skipped). Accelerations are validated but not used (no quintic
segments).
"""

from collections.abc import Sequence
from dataclasses import dataclass
import math

import numpy as np


class TrajectoryError(ValueError):
    """A trajectory that cannot be executed; the executor's motion is left unchanged."""


@dataclass(frozen=True)
class Trajectory:
    """
    A validated trajectory over some of the executor's joints.

    `indices[j]` is the executor joint that column j drives; `times` are seconds from
    `start_time` (0.0 means "at receipt"); `velocities` is None or shaped like `positions`.
    """

    indices: np.ndarray
    times: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray | None
    start_time: float

    @property
    def empty(self) -> bool:
        """Return True when there are no points: JTC's "stop" command."""
        return self.times.size == 0


def _field(points: Sequence[Sequence[float]], name: str, width: int) -> np.ndarray | None:
    """Per-point values as an (n, width) array; None when no point has the field."""
    sizes = {len(p) for p in points}
    if sizes == {0}:
        return None
    if sizes != {width}:
        raise TrajectoryError(f'{name}: every point needs {width} values or none do, got {sizes}')
    values = np.array(points, dtype=float).reshape(len(points), width)
    if not np.all(np.isfinite(values)):
        raise TrajectoryError(f'{name}: non-finite value')
    return values


def make_trajectory(
    known_names: Sequence[str],
    joint_names: Sequence[str],
    times: Sequence[float],
    positions: Sequence[Sequence[float]],
    velocities: Sequence[Sequence[float]] = (),
    accelerations: Sequence[Sequence[float]] = (),
    start_time: float = 0.0,
) -> Trajectory:
    """
    Validate a trajectory message's contents and map its joint names onto `known_names`.

    Per-point fields may be empty sequences (velocities and accelerations may be omitted as a
    whole). Raises TrajectoryError on unknown or repeated names, inconsistent lengths,
    non-finite numbers, missing positions or times that do not strictly increase.
    """
    n = len(times)
    velocities = velocities if len(velocities) else [()] * n
    accelerations = accelerations if len(accelerations) else [()] * n
    if len(positions) != n or len(velocities) != n or len(accelerations) != n:
        raise TrajectoryError('points disagree on their number of fields')
    unknown = [name for name in joint_names if name not in known_names]
    if unknown:
        raise TrajectoryError(f'unknown joints {unknown}')
    if len(set(joint_names)) != len(joint_names):
        raise TrajectoryError('repeated joint names')
    if not math.isfinite(start_time):
        raise TrajectoryError('non-finite start time')
    width = len(joint_names)
    indices = np.array([list(known_names).index(name) for name in joint_names], dtype=int)
    times_arr = np.array(times, dtype=float).reshape(n)
    if n == 0:
        return Trajectory(indices, times_arr, np.zeros((0, width)), None, start_time)
    if width == 0:
        raise TrajectoryError('points but no joint names')
    if not np.all(np.isfinite(times_arr)) or times_arr[0] < 0.0:
        raise TrajectoryError('time_from_start must be finite and not negative')
    if np.any(np.diff(times_arr) <= 0.0):
        raise TrajectoryError('time_from_start must strictly increase')
    pos = _field(positions, 'positions', width)
    if pos is None:
        raise TrajectoryError('positions are required')
    vel = _field(velocities, 'velocities', width)
    _field(accelerations, 'accelerations', width)
    return Trajectory(indices, times_arr, pos, vel, start_time)


def _hermite(
    t0: float, p0: np.ndarray, v0: np.ndarray, t1: float, p1: np.ndarray, v1: np.ndarray,
    t: float,
) -> np.ndarray:
    span = t1 - t0
    s = (t - t0) / span
    s2, s3 = s * s, s * s * s
    return ((2 * s3 - 3 * s2 + 1) * p0 + (s3 - 2 * s2 + s) * span * v0
            + (-2 * s3 + 3 * s2) * p1 + (s3 - s2) * span * v1)


def _linear(t0: float, p0: np.ndarray, t1: float, p1: np.ndarray, t: float) -> np.ndarray:
    return p0 + (p1 - p0) * ((t - t0) / (t1 - t0))


class TrajectoryExecutor:
    """Holds the active trajectory and answers "where should each joint be at time t"."""

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = tuple(joint_names)
        self._traj: Trajectory | None = None
        self._t_receipt = 0.0
        self._t_start = 0.0
        self._q_receipt = np.zeros(len(self.joint_names))
        self._v_receipt = np.zeros(len(self.joint_names))

    @property
    def active(self) -> bool:
        """Return True while a trajectory is being followed (including holding its last point)."""
        return self._traj is not None

    def set_trajectory(
        self, traj: Trajectory, now: float, position: Sequence[float],
        velocity: Sequence[float],
    ) -> None:
        """
        Replace the active trajectory, starting from the arm's state at `now`.

        Raises TrajectoryError, leaving the motion unchanged, for a stamped trajectory that
        ends before `now` (JTC ignores those too).
        """
        if traj.start_time > 0.0 and not traj.empty and traj.start_time + traj.times[-1] < now:
            raise TrajectoryError('stamped trajectory ends in the past')
        if traj.empty:
            self.stop()
            return
        self._traj = traj
        self._t_receipt = now
        self._t_start = traj.start_time if traj.start_time > 0.0 else now
        self._q_receipt = np.array(position, dtype=float)
        self._v_receipt = np.array(velocity, dtype=float)

    def stop(self) -> None:
        """Drop the active trajectory; the arm holds wherever it is."""
        self._traj = None

    def sample(self, now: float) -> np.ndarray | None:
        """Desired positions of all joints at `now`, or None when no trajectory is active."""
        traj = self._traj
        if traj is None:
            return None
        desired = self._q_receipt.copy()
        desired[traj.indices] = self._sample_columns(traj, max(now, self._t_receipt))
        return desired

    def _sample_columns(self, traj: Trajectory, t: float) -> np.ndarray:
        abs_times = self._t_start + traj.times
        vel = traj.velocities
        if t >= abs_times[-1]:
            return traj.positions[-1]
        i = int(np.searchsorted(abs_times, t, side='right'))
        if i == 0:
            t0, t1 = self._t_receipt, abs_times[0]
            p0, p1 = self._q_receipt[traj.indices], traj.positions[0]
            if t1 <= t0:
                return p1
            if vel is None:
                return _linear(t0, p0, t1, p1, t)
            return _hermite(t0, p0, self._v_receipt[traj.indices], t1, p1, vel[0], t)
        t0, t1 = abs_times[i - 1], abs_times[i]
        p0, p1 = traj.positions[i - 1], traj.positions[i]
        if vel is None:
            return _linear(t0, p0, t1, p1, t)
        return _hermite(t0, p0, vel[i - 1], t1, p1, vel[i], t)
