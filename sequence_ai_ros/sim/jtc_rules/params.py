"""
A stock joint_trajectory_controller's parameters: names, defaults per distro, validators.

The sources and how far their branches were established are listed in the package docstring
(sequence_ai_ros/sim/jtc_rules/__init__.py); each rule here cites its lines.
"""

from dataclasses import dataclass, fields, replace

DISTROS = ('humble', 'jazzy', 'kilted')
DEFAULT_DISTRO = 'jazzy'
INTERPOLATION_METHODS = ('splines', 'none')
COMMAND_INTERFACE_TYPES = ('position', 'velocity', 'acceleration', 'effort')
STATE_INTERFACE_TYPES = ('position', 'velocity', 'acceleration')


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
