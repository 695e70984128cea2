"""
What a stock joint_trajectory_controller (JTC) accepts, per ROS distro, ROS-free.

Ported from ros-controls/ros2_controllers, joint_trajectory_controller/ (branches humble,
jazzy, kilted). The source index this was read from serves file versions without a commit
(or with a commit that is no branch tip), so every rule below is anchored by the upstream
function and the exact text it logs, which is what one greps for in a branch:

- src/joint_trajectory_controller.cpp, JointTrajectoryController::validate_trajectory_msg and
  validate_trajectory_point_field (read in a jazzy-era version: get_lifecycle_state,
  get_optional, new_trajectory_msg_, no speed scaling).
- src/joint_trajectory_controller_parameters.yaml: names, defaults, validators.
- CHANGELOG.rst of the humble branch (2.51.0, 2025-12-01) for what humble has: the
  allow_nonzero_velocity_at_trajectory_end parameter (2.24.0, #705, default left true: 2.30.0
  backported only the renames of #834), effort fields rejected (2.24.0, #699), cmd_timeout
  (2.30.0, #609), empty trajectories rejected (2.33.0, #902), end time from the last point
  (2.36.0, #1090); no sampling one cycle ahead (#1306 is jazzy 4.17.0 only).
- doc/release_notes/Jazzy.rst (#834: default false from Jazzy on) and the Kilted release
  notes (speed scaling #1191, PID anti-windup #1759: no change to what is accepted).

A message is described plainly (:class:`TrajectoryMsg`), so the rules run without rclpy.
"""

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
import math

DISTROS = ('humble', 'jazzy', 'kilted')
DEFAULT_DISTRO = 'jazzy'
# std::numeric_limits<float>::epsilon(): upstream's "is this velocity zero" threshold.
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
# Structural parameters are read_only in the upstream YAML (#771); the rest are dynamic (#761).
READ_ONLY = frozenset({'joints', 'command_joints', 'command_interfaces', 'state_interfaces',
                       'interpolation_method', 'action_monitor_rate', 'state_publish_rate'})


def defaults(distro: str) -> JtcParams:
    """
    Upstream defaults of `distro` ('humble' | 'jazzy' | 'kilted'); ValueError otherwise.

    allow_nonzero_velocity_at_trajectory_end: true on humble (#705, never flipped there), false
    from jazzy on (#834, doc/release_notes/Jazzy.rst). state_publish_rate: humble only (its
    2.40.0 changelog still tunes it; removed in Iron by #520).
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
    """Whether the command is sampled one control period ahead (jazzy 4.17.0, #1306)."""
    return distro != 'humble'


def effort_reason(distro: str) -> str:
    """Upstream's text for a point with effort on a controller without an effort interface."""
    if distro == 'humble':
        return 'Trajectories with effort fields are currently not supported.'
    return ('Trajectories with effort fields are only supported for controllers using the '
            "'effort' command interface.")


def _field_reason(count: int, values: Sequence[float], name: str, index: int,
                  allow_empty: bool) -> str | None:
    """Port of validate_trajectory_point_field: 'Mismatch between joint_names size ...'."""
    if allow_empty and not values:
        return None
    if len(values) != count:
        return (f'Mismatch between joint_names size ({count}) and {name} ({len(values)}) '
                f'at point #{index}.')
    return None


def _point_reason(point: Point, index: int, count: int, params: JtcParams) -> str | None:
    """Check one point as validate_trajectory_msg does, in upstream's order."""
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

    The checks and their order are validate_trajectory_msg's: partial joints, empty names,
    no points, unknown joint, moving last point, stamped and already over, then per point
    strictly increasing times, the fields each point must carry, and effort. The reason is
    the RCLCPP_ERROR text with the values printf fills in (%f: six decimals; %.15f).
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

    Upstream checks none of these: a NaN is written to the hardware; a repeated name leaves a
    joint at 0.0 after sort_to_local_joint_order; two points with accelerations but without
    velocities match no branch of interpolate_between_points (trajectory.cpp), which then
    outputs zeros. The sim holds instead. Every reason starts with 'sim:'.
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

    A timeout that is not greater than constraints.goal_time is switched off, with a warning.
    """
    if params.cmd_timeout <= 0.0:
        return 0.0, None
    if params.cmd_timeout > params.goal_time:
        return params.cmd_timeout, None
    return 0.0, (f'Command timeout must be higher than goal_time tolerance '
                 f'({params.cmd_timeout:f} vs. {params.goal_time:f})')


def check_configuration(params: JtcParams) -> str | None:
    """Return why on_configure (or a parameter validator) would refuse `params`, or None."""
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
