"""
What a stock joint_trajectory_controller (JTC) accepts, per ROS distro, ROS-free.

Ported from ros-controls/ros2_controllers (humble, jazzy, kilted). Each rule cites
`<path> @ <commit> (<branch>), lines A-B` in a file version the source index stores; it
keeps many versions per file but exposes few commits, none of them shown to be on the
jazzy or kilted branch, so the versions below are the closest it serves:

- joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
  unverified): the version whose validate_trajectory_msg (lines 1995-2140) these checks
  follow, check for check and in order. It has speed scaling (#1191, Kilted) and the PID
  anti-windup (#1759), so it is on the Kilted-or-later master line, but also parameters no
  release notes read here mention (positions_upsampling, allow_trajectory_replacement,
  constraints.decelerate_on_cancel): it may be a pull-request branch.
- joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master, 4.x:
  package.xml in the same commit reads 4.5.0; humble is 2.x, iron 3.x, Jazzy ships 4.x),
  the branch-checked cross-reference: validate_trajectory_msg lines 1340-1470 has the same
  checks except that the end time sums every point's time (lines 1361-1380, before #1090),
  "Empty trajectory received." comes after the joint and end-time checks (lines 1396-1400),
  effort is refused with the humble words (lines 1461-1467), a point with no fields is
  refused without a message (lines 1433-1452), and update samples at `time` (lines
  176-179, before #1306).
- joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml @ 02aa3725
  (branch unverified; speed_scaling and antiwindup_strategy: Kilted-or-later): names,
  defaults, validators, read_only.
- joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble: 2.x releases after
  Iron's 3.x exist only on humble; top entry 2.51.0, 2025-12-01) for what humble has:
  allow_nonzero_velocity_at_trajectory_end (2.24.0 #705, line 216; default left true:
  2.30.0 backports only the renames of #834, line 178), effort refused (2.24.0 #699, line
  215), cmd_timeout (2.30.0 #609, line 184), empty trajectories refused (2.33.0 #902, line
  147), end time from the last point (2.36.0 #1090, line 125); no sampling one cycle ahead
  (no #1306 entry; 2.38.0 has only #1297, line 98).
- doc/release_notes/Jazzy.rst @ 3a1b0db1 (branch unverified), line 19: #834, default false
  from Jazzy on; line 32: #902. No Kilted release notes are stored (doc/release_notes/ holds
  Iron.rst and Jazzy.rst); speed scaling and anti-windup change nothing that is accepted.

A message is described plainly (:class:`TrajectoryMsg`), so the rules run without rclpy.
"""

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
import math

DISTROS = ('humble', 'jazzy', 'kilted')
DEFAULT_DISTRO = 'jazzy'
# std::numeric_limits<float>::epsilon(): upstream's "is this velocity zero" threshold
# (joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8, line 2045).
FLOAT_EPSILON = 1.1920928955078125e-07
INTERPOLATION_METHODS = ('splines', 'none')
COMMAND_INTERFACE_TYPES = ('position', 'velocity', 'acceleration', 'effort')
STATE_INTERFACE_TYPES = ('position', 'velocity', 'acceleration')


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


@dataclass(frozen=True)
class JtcParams:
    """
    The JTC parameters the simulated controller honours, named as upstream names them.

    Nested upstream names are flattened: `goal_time` is `constraints.goal_time`,
    `stopped_velocity_tolerance` is `constraints.stopped_velocity_tolerance`
    (:data:`ROS_NAMES`). `state_publish_rate` exists on humble only (None elsewhere).
    Defaults: joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml
    @ 02aa3725 (branch unverified), lines 2-135 and 204-217. That version has no
    `open_loop_control` (its successor `interpolate_from_desired_state` is lines 80-94);
    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master,
    4.5.0) still reads it, line 164.
    """

    joints: tuple[str, ...] = ()
    command_joints: tuple[str, ...] = ()
    command_interfaces: tuple[str, ...] = ()
    state_interfaces: tuple[str, ...] = ()
    allow_partial_joints_goal: bool = False
    open_loop_control: bool = False
    allow_integration_in_goal_trajectories: bool = False
    set_last_command_interface_value_as_state_on_activation: bool = True
    action_monitor_rate: float = 20.0
    interpolation_method: str = 'splines'
    allow_nonzero_velocity_at_trajectory_end: bool = False
    cmd_timeout: float = 0.0
    state_publish_rate: float | None = None
    stopped_velocity_tolerance: float = 0.01
    goal_time: float = 0.0
    distro: str = DEFAULT_DISTRO


ROS_NAMES = {f.name: f.name for f in fields(JtcParams) if f.name != 'distro'}
ROS_NAMES.update(goal_time='constraints.goal_time',
                 stopped_velocity_tolerance='constraints.stopped_velocity_tolerance')
# Structural parameters are read_only in the upstream YAML (#771; humble CHANGELOG.rst line
# 187); the rest are dynamic (#761, line 176): joint_trajectory_controller_parameters.yaml
# @ 02aa3725 (branch unverified), read_only at lines 6, 20, 29, 41, 109 and 118.
READ_ONLY = frozenset({'joints', 'command_joints', 'command_interfaces', 'state_interfaces',
                       'interpolation_method', 'action_monitor_rate', 'state_publish_rate'})


def defaults(distro: str) -> JtcParams:
    """
    Upstream defaults of `distro` ('humble' | 'jazzy' | 'kilted'); ValueError otherwise.

    allow_nonzero_velocity_at_trajectory_end: true on humble (#705, never flipped there:
    joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble), lines 216 and
    178), false from jazzy on (#834: doc/release_notes/Jazzy.rst @ 3a1b0db1 (branch
    unverified), line 19;
    joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml @ 02aa3725
    (branch unverified), lines 123-127). state_publish_rate: humble only
    (joint_trajectory_controller/CHANGELOG.rst @ no commit exposed (humble), line 84: 2.40.0
    still tunes it; its removal in Iron, #520, was not found in a stored version).
    """
    if distro not in DISTROS:
        raise ValueError(f"controller_distro must be one of {DISTROS}, got '{distro}'")
    humble = distro == 'humble'
    return JtcParams(allow_nonzero_velocity_at_trajectory_end=humble,
                     state_publish_rate=50.0 if humble else None, distro=distro)


def with_values(params: JtcParams, values: dict[str, object]) -> JtcParams:
    """Return `params` with upstream-named values (e.g. 'constraints.goal_time') replaced."""
    by_ros_name = {ros: name for name, ros in ROS_NAMES.items()}
    changes = {}
    for ros_name, value in values.items():
        name = by_ros_name[ros_name]
        changes[name] = tuple(value) if isinstance(value, (list, tuple)) else value
    return replace(params, **changes)


def samples_next_cycle(distro: str) -> bool:
    """
    Whether the command is sampled one control period ahead (#1306).

    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    unverified), lines 346-349 sample at traj_time_ + update_period_;
    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master,
    4.5.0), lines 176-179 still sample at `time`; joint_trajectory_controller/CHANGELOG.rst
    @ no commit exposed (humble) has no #1306 entry (2.38.0 has #1297 only, line 98). Which
    jazzy release took #1306 was not re-checked.
    """
    return distro != 'humble'


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


def effective_cmd_timeout(params: JtcParams) -> tuple[float, str | None]:
    """
    Return the cmd_timeout on_activate keeps, and upstream's warning if it drops it.

    A timeout that is not greater than constraints.goal_time is switched off, with a warning:
    on_activate, joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8
    (branch unverified), lines 1259-1278; the same in
    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 07749aa0 (master,
    4.5.0), lines 940-960.
    """
    if params.cmd_timeout <= 0.0:
        return 0.0, None
    if params.cmd_timeout > params.goal_time:
        return params.cmd_timeout, None
    return 0.0, (f'Command timeout must be higher than goal_time tolerance '
                 f'({params.cmd_timeout:f} vs. {params.goal_time:f})')


def check_configuration(params: JtcParams) -> str | None:
    """
    Return why on_configure (or a parameter validator) would refuse `params`, or None.

    Validators: joint_trajectory_controller/src/joint_trajectory_controller_parameters.yaml
    @ 02aa3725 (branch unverified): unique<> (lines 8, 22, 31, 43), size_gt<> (9, 32, 44),
    subset_of<> (33, 45), one_of<> (120), gt_eq (111, 215). on_configure in
    joint_trajectory_controller/src/joint_trajectory_controller.cpp @ 38679ea8 (branch
    unverified): "'command_interfaces' parameter is empty." (lines 883-887),
    "'state_interfaces' parameter is empty." (922-926). "'joints' parameter is empty." is
    the warning of joint_trajectory_controller/src/joint_trajectory_controller.cpp
    @ 07749aa0 (master, 4.5.0), lines 641-645, after which it goes on; size_gt<> (line 9)
    is what refuses it. "'position' state interface is required" is the sim's words for
    state_interface_type_combinations in
    joint_trajectory_controller/include/joint_trajectory_controller/validate_jtc_parameters.hpp
    @ 01936294 (branch unverified), lines 67-95, which refuses every non-empty set without
    'position'.
    """
    for name in ('joints', 'command_joints', 'command_interfaces', 'state_interfaces'):
        values = getattr(params, name)
        if len(set(values)) != len(values):
            return f"Parameter '{name}' must contain no duplicates"
    if not params.joints:
        return "'joints' parameter is empty."
    if not params.command_interfaces:
        return "'command_interfaces' parameter is empty."
    if not params.state_interfaces:
        return "'state_interfaces' parameter is empty."
    for name, allowed in (('command_interfaces', COMMAND_INTERFACE_TYPES),
                          ('state_interfaces', STATE_INTERFACE_TYPES)):
        unknown = [v for v in getattr(params, name) if v not in allowed]
        if unknown:
            return f"Parameter '{name}' entries {unknown} are not in {list(allowed)}"
    if 'position' not in params.state_interfaces:
        return "'position' state interface is required"
    if params.interpolation_method not in INTERPOLATION_METHODS:
        return f"Parameter 'interpolation_method' must be one of {list(INTERPOLATION_METHODS)}"
    if params.goal_time < 0.0:
        return "Parameter 'constraints.goal_time' must be >= 0.0"
    if params.action_monitor_rate < 0.1:
        return "Parameter 'action_monitor_rate' must be >= 0.1"
    return None
