"""
What validate_trajectory_msg refuses in a trajectory_msgs/JointTrajectory, and what the sim adds.

A message is described plainly (:class:`TrajectoryMsg`), so the rules run without rclpy. The
sources and how far their branches were established are listed in the package docstring
(sequence_ai_ros/sim/jtc_rules/__init__.py); each rule here cites its lines.
"""

from collections.abc import Sequence
from dataclasses import dataclass
import math

from sequence_ai_ros.sim.jtc_rules.params import JtcParams

# std::numeric_limits<float>::epsilon(): upstream's "is this velocity zero" threshold
# (joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8, line 2045).
FLOAT_EPSILON = 1.1920928955078125e-07


@dataclass(frozen=True)
class Point:
    """One trajectory_msgs/JointTrajectoryPoint: per-joint fields and time_from_start (s)."""

    positions: tuple[float, ...] = ()
    velocities: tuple[float, ...] = ()
    accelerations: tuple[float, ...] = ()
    effort: tuple[float, ...] = ()
    time_from_start: float = 0.0


@dataclass(frozen=True)
class TrajectoryMsg:
    """One trajectory_msgs/JointTrajectory: joint names, header stamp (s, 0 = now), points."""

    joint_names: tuple[str, ...]
    points: tuple[Point, ...]
    stamp: float = 0.0

    @property
    def times(self) -> tuple[float, ...]:
        """Return every point's time_from_start."""
        return tuple(p.time_from_start for p in self.points)

    @property
    def positions(self) -> tuple[tuple[float, ...], ...]:
        """Return every point's positions."""
        return tuple(p.positions for p in self.points)


def effort_reason(distro: str) -> str:
    """
    Upstream's text for a point with effort on a controller without an effort interface.

    Humble: joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0
    (master, 4.5.0), lines 1461-1467, the words #699 brought
    (joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble), line 215).
    Later: joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8
    (branch unverified), lines 2129-2137.
    """
    if distro == 'humble':
        return 'Trajectories with effort fields are currently not supported.'
    return ('Trajectories with effort fields are only supported for controllers using the '
            "'effort' command interface.")


def _field_reason(count: int, values: Sequence[float], name: str, index: int,
                  allow_empty: bool) -> str | None:
    """
    Port of validate_trajectory_point_field: 'Mismatch between joint_names size ...'.

    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    unverified), lines 1976-1993.
    """
    if allow_empty and not values:
        return None
    if len(values) != count:
        return (f'Mismatch between joint_names size ({count}) and {name} ({len(values)}) '
                f'at point #{index}.')
    return None


def _point_reason(point: Point, index: int, count: int, params: JtcParams) -> str | None:
    """
    Check one point as validate_trajectory_msg does, in upstream's order.

    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    unverified), lines 2093-2128 (with allow_integration_in_goal_trajectories: 2095-2120).
    """
    if params.allow_integration_in_goal_trajectories:
        if not point.positions and not point.velocities and not point.accelerations:
            return 'The given trajectory has no position, velocity, or acceleration points.'
        for values, name in ((point.positions, 'positions'), (point.velocities, 'velocities'),
                             (point.accelerations, 'accelerations')):
            reason = values and _field_reason(count, values, name, index, False)
            if reason:
                return reason
        return None
    for values, name, allow_empty in ((point.positions, 'positions', False),
                                      (point.velocities, 'velocities', True),
                                      (point.accelerations, 'accelerations', True)):
        reason = _field_reason(count, values, name, index, allow_empty)
        if reason:
            return reason
    return None


def validate_trajectory(msg: TrajectoryMsg, params: JtcParams, now: float,
                        has_effort_command_interface: bool = False) -> str | None:
    """
    Return None if a stock JTC of `params.distro` accepts `msg` at time `now`, else its reason.

    The checks and their order are validate_trajectory_msg's,
    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    unverified), lines 1995-2140: partial joints (1998-2009), empty names (2011-2016), no
    points (2018-2023), unknown joint (2025-2038), moving last point (2040-2054), stamped
    and already over (2056-2073), then per point strictly increasing times (2078-2088), the
    fields each point must carry (2093-2128), and effort (2129-2137). The reason is the
    RCLCPP_ERROR text with the values printf fills in (%f: six decimals; %.15f).
    """
    names = msg.joint_names
    if not params.allow_partial_joints_goal and len(names) != len(params.joints):
        return "Joints on incoming trajectory don't match the controller joints."
    if not names:
        return 'Empty joint names on incoming trajectory.'
    if not msg.points:
        return 'Empty trajectory received.'
    for name in names:
        if name not in params.joints:
            return f"Incoming joint {name} doesn't match the controller's joints."
    if not params.allow_nonzero_velocity_at_trajectory_end:
        last = msg.points[-1].velocities
        for i, v in enumerate(last):
            if abs(v) > FLOAT_EPSILON:
                if i >= len(names):  # upstream's joint_names.at(i) would throw here
                    return f'sim: last point has {len(last)} velocities for {len(names)} joints'
                return (f'Velocity of last trajectory point of joint {names[i]} is not zero: '
                        f'{v:.15f}')
    if msg.stamp != 0.0:
        end = msg.stamp + msg.points[-1].time_from_start
        if end < now:
            return (f'Received trajectory with non-zero start time ({msg.stamp:f}) that ends in '
                    f'the past ({end:f})')
    previous = 0.0
    for i, point in enumerate(msg.points):
        if i > 0 and point.time_from_start <= previous:
            return (f'Time between points {i - 1} and {i} is not strictly increasing, it is '
                    f'{previous:f} and {point.time_from_start:f} respectively')
        previous = point.time_from_start
        reason = _point_reason(point, i, len(names), params)
        if reason:
            return reason
        if point.effort and (params.distro == 'humble' or not has_effort_command_interface):
            return effort_reason(params.distro)
    return None


def sim_checks(msg: TrajectoryMsg) -> str | None:
    """
    Return why the sim refuses a message upstream would accept and then execute badly.

    Upstream checks none of these: validate_trajectory_msg has no finiteness check, so a
    NaN is written to the hardware; a repeated name leaves a joint at 0.0 after
    sort_to_local_joint_order (joint_trajectory_controller/src/joint_trajectory_controller.cpp
    @ 38679ea8 (branch unverified), lines 1995-2140 and 1927-1974); two points with
    accelerations but without velocities match no branch of interpolate_between_points
    (joint_trajectory_controller/src/trajectory.cpp @ 01936294 (branch unverified), lines
    191-192 and 207-298, after deduce_from_derivatives, lines 301-334), which then outputs
    the zeros of lines 178-180. The sim holds instead. Every reason starts with 'sim:'.
    """
    if len(set(msg.joint_names)) != len(msg.joint_names):
        return f'sim: repeated joint names {list(msg.joint_names)}'
    for i, point in enumerate(msg.points):
        values = (*point.positions, *point.velocities, *point.accelerations, *point.effort,
                  point.time_from_start)
        if not all(math.isfinite(v) for v in values):
            return f'sim: non-finite value at point #{i}'
    if not math.isfinite(msg.stamp):
        return 'sim: non-finite header stamp'
    for i in range(1, len(msg.points)):
        a, b = msg.points[i - 1], msg.points[i]
        # A point without positions gets velocities from deduce_from_derivatives first.
        if b.positions and a.accelerations and b.accelerations and not (
                b.velocities and (a.velocities or not a.positions)):
            return (f'sim: points #{i - 1} and #{i} carry accelerations without velocities: '
                    'upstream interpolates no spline there and commands 0.0 to every joint')
    return None
