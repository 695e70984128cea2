"""
The segment interpolation of joint_trajectory_controller, ROS-free.

Ported from ros-controls/ros2_controllers joint_trajectory_controller/src/trajectory.cpp
(same on humble, jazzy and kilted): Trajectory::interpolate_between_points picks the spline by
the fields *both* ends carry (positions only: linear; with velocities: cubic; with velocities
and accelerations: quintic), and a sample outside the segment is clamped to its end and
evaluated linearly; Trajectory::deduce_from_derivatives fills a point without positions
(allow_integration_in_goal_trajectories) by integrating velocities and accelerations.
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class State:
    """A trajectory point in controller joint order; a field is None when it is empty."""

    positions: np.ndarray | None
    velocities: np.ndarray | None = None
    accelerations: np.ndarray | None = None


def _powers(x: float, n: int) -> list[float]:
    return [x ** k for k in range(n + 1)]


def interpolate(t_a: float, a: State, t_b: float, b: State, t: float) -> State:
    """
    Sample the segment from `a` at `t_a` to `b` at `t_b` at time `t`.

    As upstream: outside [t_a, t_b] the time is clamped and the segment treated as linear;
    with velocities on one end only, linear; accelerations without velocities on both ends
    select no spline at all and upstream outputs zeros (the sim refuses such messages before
    they get here, see jtc_rules.sim_checks).
    """
    assert a.positions is not None and b.positions is not None
    span = t_b - t_a
    so_far = t - t_a
    has_velocity = a.velocities is not None and b.velocities is not None
    has_accel = a.accelerations is not None and b.accelerations is not None
    if so_far < 0.0 or so_far > span:
        so_far = min(max(so_far, 0.0), span)
        has_velocity = has_accel = False
    dim = a.positions.size
    zeros = np.zeros(dim)
    s = _powers(so_far, 5)
    if not has_velocity and not has_accel:
        slope = (b.positions - a.positions) / span if span != 0.0 else zeros
        return State(a.positions + s[1] * slope, slope.copy(), zeros.copy())
    if has_velocity and not has_accel:
        assert a.velocities is not None and b.velocities is not None
        c0, c1 = a.positions, a.velocities
        c2, c3 = zeros, zeros
        if span != 0.0:
            big = _powers(span, 3)
            c2 = (-3.0 * c0 + 3.0 * b.positions - 2.0 * c1 * big[1]
                  - b.velocities * big[1]) / big[2]
            c3 = (2.0 * c0 - 2.0 * b.positions + c1 * big[1] + b.velocities * big[1]) / big[3]
        return State(c0 + s[1] * c1 + s[2] * c2 + s[3] * c3,
                     c1 + 2.0 * s[1] * c2 + 3.0 * s[2] * c3,
                     2.0 * c2 + 6.0 * s[1] * c3)
    if has_velocity and has_accel:
        assert a.velocities is not None and b.velocities is not None
        assert a.accelerations is not None and b.accelerations is not None
        p0, v0, a0 = a.positions, a.velocities, a.accelerations
        p1, v1, a1 = b.positions, b.velocities, b.accelerations
        c = [p0, v0, 0.5 * a0, zeros, zeros, zeros]
        if span != 0.0:
            big = _powers(span, 5)
            c[3] = (-20.0 * p0 + 20.0 * p1 - 3.0 * a0 * big[2] + a1 * big[2]
                    - 12.0 * v0 * big[1] - 8.0 * v1 * big[1]) / (2.0 * big[3])
            c[4] = (30.0 * p0 - 30.0 * p1 + 3.0 * a0 * big[2] - 2.0 * a1 * big[2]
                    + 16.0 * v0 * big[1] + 14.0 * v1 * big[1]) / (2.0 * big[4])
            c[5] = (-12.0 * p0 + 12.0 * p1 - a0 * big[2] + a1 * big[2]
                    - 6.0 * v0 * big[1] - 6.0 * v1 * big[1]) / (2.0 * big[5])
        position = sum(s[k] * c[k] for k in range(6))
        velocity = sum(k * s[k - 1] * c[k] for k in range(1, 6))
        acceleration = sum(k * (k - 1) * s[k - 2] * c[k] for k in range(2, 6))
        return State(position, velocity, acceleration)
    return State(zeros.copy(), zeros.copy(), zeros.copy())


def deduce_from_derivatives(first: State, second: State, dim: int, delta_t: float) -> None:
    """Fill `second`'s missing positions (and velocities) by integration, in place."""
    if second.positions is not None:
        return
    if first.velocities is None:
        first.velocities = np.zeros(dim)
    if second.velocities is None:
        if first.accelerations is None:
            first.accelerations = np.zeros(dim)
        accel = second.accelerations if second.accelerations is not None else np.zeros(dim)
        second.velocities = first.velocities + (first.accelerations + accel) * 0.5 * delta_t
    assert first.positions is not None
    # The second velocity is reached at the segment's end, so integrate with the mean.
    second.positions = first.positions + (first.velocities + second.velocities) * 0.5 * delta_t
