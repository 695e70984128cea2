"""
Ask the arm's controller, at configure, whether it will accept what this node sends.

ros2_control runs each controller as a node named after it, with its parameters behind the
standard parameter services; `/<controller>/get_parameters` answers `joints`,
`command_interfaces`, `allow_nonzero_velocity_at_trajectory_end` (joint_trajectory_controller)
or `joints` and `interface_name` (forward_command_controller). A mismatch found here would make
the controller reject every command, so it fails configure naming it; a controller that cannot
be asked (not running yet, another driver) is only a warning.

A gripper action server is told apart by the action type it serves: gripper_action_controller
and franka_gripper serve control_msgs/action/GripperCommand, parallel_gripper_action_controller
(Jazzy on; the only one from Kilted on) ParallelGripperCommand. The node sends whichever is
served; anything else on that name fails configure naming it.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters

from .arm_output import FORWARD_MODES, FORWARD_VELOCITY, TRAJECTORY_MODES

__all__ = ['ControllerReport', 'ask_controller', 'ask_update_rate', 'check_controller',
           'check_feed_rate', 'gripper_action_type', 'GRIPPER_ACTIONS', 'manager_of']

TRAJECTORY_PARAMETERS = ('joints', 'command_interfaces', 'allow_partial_joints_goal',
                         'allow_nonzero_velocity_at_trajectory_end', 'cmd_timeout')
FORWARD_PARAMETERS = ('joints', 'interface_name')
# The gripper actions the node can send, by the type name the graph reports.
GRIPPER_ACTIONS = {'control_msgs/action/GripperCommand': 'GripperCommand',
                   'control_msgs/action/ParallelGripperCommand': 'ParallelGripperCommand'}


@dataclass
class ControllerReport:
    """What the controller said: problems fail configure, warnings are logged."""

    answered: bool
    values: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _value(parameter: Any) -> Any:
    kind = parameter.type
    if kind == ParameterType.PARAMETER_NOT_SET:
        return None
    readers: dict[int, Callable[[Any], Any]] = {
        ParameterType.PARAMETER_BOOL: lambda p: p.bool_value,
        ParameterType.PARAMETER_INTEGER: lambda p: p.integer_value,
        ParameterType.PARAMETER_DOUBLE: lambda p: p.double_value,
        ParameterType.PARAMETER_STRING: lambda p: p.string_value,
        ParameterType.PARAMETER_STRING_ARRAY: lambda p: list(p.string_array_value),
    }
    read = readers.get(kind)
    return None if read is None else read(parameter)


def ask_controller(node: Any, controller: str, mode: str, timeout_s: float
                   ) -> dict[str, Any] | None:
    """Return the controller's parameters that matter for `mode`, or None if it cannot answer."""
    from .probe import call_service_once
    names = TRAJECTORY_PARAMETERS if mode in TRAJECTORY_MODES else FORWARD_PARAMETERS
    answer = call_service_once(node, GetParameters, f'{controller}/get_parameters',
                               GetParameters.Request(names=list(names)), timeout_s)
    if answer is None:
        return None
    return {name: _value(value) for name, value in zip(names, answer.values)}


def manager_of(controller: str) -> str:
    """Return the controller_manager beside `controller` (a resolved name): its namespace's."""
    return f'{controller.rsplit("/", 1)[0]}/controller_manager'


def ask_update_rate(node: Any, manager: str, timeout_s: float) -> float | None:
    """Return the controller_manager's update_rate (Hz), or None if it does not say."""
    from .probe import call_service_once
    answer = call_service_once(node, GetParameters, f'{manager}/get_parameters',
                               GetParameters.Request(names=['update_rate']), timeout_s)
    value = None if answer is None or not answer.values else _value(answer.values[0])
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def check_feed_rate(update_rate: float | None, feed_hz: float, manager: str) -> list[str]:
    """
    Warn when forward_position's values come slower than the controller_manager updates.

    A forward controller writes the latest value every update and holds it until the next
    arrives, so between values the arm stands still, then jumps: the real controller_manager
    at 1 kHz, fed lines at 500 Hz by this node on a busy machine, moved the arm with 3.1-3.2x
    trajectory_stream's p99 jerk. A Python timer cannot feed 1 kHz evenly (the bench: gaps up
    to 16 ms at 500 Hz on two busy cores).
    """
    if update_rate is None or (feed_hz > 0 and update_rate <= feed_hz):
        return []
    sent = f'its lines at forward_output_rate_hz {feed_hz:g}' if feed_hz > 0 \
        else 'each step at once (forward_output_rate_hz 0)'
    return [f'output_mode forward_position: {manager} updates at {update_rate:g} Hz and this '
            f'node sends {sent}, later still on a busy machine: the controller holds each '
            'value until the next arrives, so the arm moves in small jumps (p99 jerk ~3x '
            "trajectory_stream's measured on ros2_control at 1 kHz); for smooth motion use "
            'output_mode trajectory_stream or trajectory_plan']


def check_controller(values: dict[str, Any] | None, mode: str, controller: str,
                     joints: Sequence[str]) -> ControllerReport:
    """
    Compare what the controller says with what `mode` will send to it for `joints`.

    The rules are the controller's own (joint_trajectory_controller's validate_trajectory_msg:
    the message's joints must be the controller's, or a subset with allow_partial_joints_goal;
    forward_command_controller: one value per joint, on the interface it claims).
    """
    if values is None:
        return ControllerReport(False, warnings=[
            f'controller {controller} did not answer get_parameters: its joints and settings '
            'were not checked (is it loaded and is this the right controller_name?)'])
    report = ControllerReport(True, values)
    kind_key = 'command_interfaces' if mode in TRAJECTORY_MODES else 'interface_name'
    if values.get('joints') is None or values.get(kind_key) is None:
        kind = 'joint_trajectory_controller' if mode in TRAJECTORY_MODES \
            else 'forward_command_controller'
        report.problems.append(f'{controller} has no {kind_key} parameter: it is not a '
                               f'{kind}, which output_mode {mode} needs (controller_name)')
        return report
    theirs = values.get('joints') or []
    missing = [j for j in joints if j not in theirs]
    if missing:
        report.problems.append(f'controller {controller} has no joint {", ".join(missing)} '
                               f'(its joints: {", ".join(theirs) or "none"}): check joint_names, '
                               'gripper_interface and controller_name')
    extra = [j for j in theirs if j not in joints]
    if mode in TRAJECTORY_MODES:
        if extra and not values.get('allow_partial_joints_goal'):
            report.problems.append(
                f'controller {controller} also drives {", ".join(extra)} and has '
                'allow_partial_joints_goal false: it would reject every command; add them to '
                'joint_names or set allow_partial_joints_goal')
        interfaces = values.get('command_interfaces') or []
        if interfaces and 'position' not in interfaces and 'velocity' not in interfaces:
            report.problems.append(f'controller {controller} commands {interfaces}: '
                                   'a position or velocity interface is needed')
        if not values.get('cmd_timeout'):
            report.warnings.append(
                f'controller {controller} has cmd_timeout 0: if this node stops, the arm '
                'finishes the last message and stays there; a cmd_timeout makes the '
                'controller hold by itself')
    elif mode in FORWARD_MODES:
        wanted = 'velocity' if mode == FORWARD_VELOCITY else 'position'
        interface = values.get('interface_name')
        if interface and interface != wanted:
            report.problems.append(f'output_mode {mode} sends {wanted}s but controller '
                                   f'{controller} commands the {interface} interface')
        if extra:
            report.problems.append(
                f'controller {controller} expects {len(theirs)} values ({", ".join(theirs)}) '
                f'and this node sends {len(joints)}: it would ignore every command')
        if theirs and not missing and list(theirs) != list(joints):
            report.problems.append(
                f'controller {controller} reads its values in the order {", ".join(theirs)}; '
                'joint_names must be in that order')
    return report


def gripper_action_type(served: Sequence[str], name: str, waited_s: float
                        ) -> tuple[str, str]:
    """
    Return (the control_msgs action to send, '') for the types served on `name`, or ('', why).

    `served` is what the graph reports for the name's action servers (probe.action_server_types).
    """
    wanted = ' or '.join(GRIPPER_ACTIONS)
    if not served:
        return '', f'no gripper action server ({wanted}) on {name} within {waited_s:.1f} s'
    if len(served) > 1:
        return '', (f'{name} is served with several action types ({", ".join(served)}): '
                    'two servers share the name; give each gripper its own')
    (kind,) = served
    if kind not in GRIPPER_ACTIONS:
        return '', (f'{name} serves {kind}, not a gripper action: gripper_interface action '
                    f'sends {wanted}; check gripper_controller and gripper_action_name, or '
                    'choose the gripper_interface that controller takes')
    return GRIPPER_ACTIONS[kind], ''
