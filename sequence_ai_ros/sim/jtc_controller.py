"""
A simulated joint_trajectory_controller: its own node, its upstream parameters, its topic.

Like a controller loaded by ros2_control's controller_manager, the node is named after the
controller (default `joint_trajectory_controller`) in the process's namespace, declares the
upstream parameters with the chosen distro's defaults (jtc_rules.defaults), so
`ros2 param get /<ns>/joint_trajectory_controller joints` answers as on a robot, and takes
overrides from a controllers YAML passed with `--ros-args --params-file` (a
`joint_trajectory_controller: ros__parameters:` block; under a namespace, rcl matches
`/<ns>/joint_trajectory_controller:` or `/**/joint_trajectory_controller:`, as for a real
controller node). It subscribes `~/joint_trajectory` with upstream's SystemDefaultsQoS and
offers SimController to the hardware loop; with control_msgs importable it also serves
`~/follow_joint_trajectory` (jtc_action.py).

What differs from upstream, on purpose: `joints`, `command_interfaces` and `state_interfaces`
default to what the sim's own controllers configuration says (upstream's defaults are empty
lists that a robot's YAML must fill); only the 'position' command interface is simulated; the
per-joint `constraints.*` and `gains.*` parameters are declared but tolerances are not checked
(upstream's 0.0 defaults check nothing either) and a position interface uses no PID.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_system_default
from sequence_ai_ros.sim import jtc_action, jtc_rules
from sequence_ai_ros.sim.controller_base import POSITION
from sequence_ai_ros.sim.jtc_rules import JtcParams
from sequence_ai_ros.sim.messages import trajectory_from_msg
from sequence_ai_ros.sim.trajectory import TrajectoryExecutor
from trajectory_msgs.msg import JointTrajectory

DEFAULT_NAME = 'joint_trajectory_controller'
SIM_COMMAND_INTERFACES = (POSITION,)
SIM_STATE_INTERFACES = ('position', 'velocity')
_PER_JOINT = (('constraints', ('trajectory', 'goal')),
              ('gains', ('p', 'i', 'd', 'i_clamp', 'ff_velocity_scale')))
_STRING_ARRAYS = ('joints', 'command_joints', 'command_interfaces', 'state_interfaces')


class JointTrajectoryControllerNode(Node):
    """The simulated JTC of `joints`; the hardware loop calls :meth:`update` every cycle."""

    def __init__(self, name: str, joints: Sequence[str], distro: str, update_period: float,
                 **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        base = jtc_rules.defaults(distro)
        sim_defaults = {'joints': list(joints), 'command_interfaces': list(SIM_COMMAND_INTERFACES),
                        'state_interfaces': list(SIM_STATE_INTERFACES)}
        values = {}
        for field_name, ros_name in jtc_rules.ROS_NAMES.items():
            default = sim_defaults.get(ros_name, getattr(base, field_name))
            if default is None:
                continue  # not a parameter of this distro
            if isinstance(default, tuple):
                default = list(default)
            values[ros_name] = self._declare(ros_name, default)
        params = jtc_rules.with_values(base, values)
        reason = jtc_rules.check_configuration(params) or _sim_support(params)
        if reason:
            raise ValueError(f'{name}: {reason}')
        for group, names in _PER_JOINT:
            for joint in params.joints:
                for leaf in names:
                    self._declare(f'{group}.{joint}.{leaf}', 0.0)
        self._executor = TrajectoryExecutor(params, update_period, self._log)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.create_subscription(JointTrajectory, '~/joint_trajectory', self._on_trajectory,
                                 qos_profile_system_default)
        self._action = jtc_action.attach(self, self._executor)
        self.get_logger().info(
            f'{distro} joint_trajectory_controller of {list(params.joints)}: command '
            f'interfaces {list(params.command_interfaces)}, state interfaces '
            f'{list(params.state_interfaces)}, allow_nonzero_velocity_at_trajectory_end '
            f'{params.allow_nonzero_velocity_at_trajectory_end}')

    @property
    def params(self) -> JtcParams:
        """Return the parameters in force."""
        return self._executor.params

    @property
    def claimed_joints(self) -> Sequence[str]:
        """Return the joints whose position command interface this controller writes."""
        return self._executor.joints

    @property
    def command_interface(self) -> str:
        """Return 'position': what :meth:`update` returns per claimed joint."""
        return POSITION

    def update(self, now: float, position: np.ndarray, velocity: np.ndarray
               ) -> np.ndarray | None:
        """Return the position command of every claimed joint at `now`."""
        command = self._executor.update(now, position, velocity)
        if self._action is not None:
            self._action.after_update(now)
        return command

    def hold(self) -> None:
        """Hold the last measured position until the next accepted message."""
        self._executor.hold()

    def destroy_node(self) -> None:
        """Destroy the action server (if any), then the node."""
        if self._action is not None:
            self._action.destroy()
        super().destroy_node()

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _log(self, level: str, text: str) -> None:
        # One call site per severity: rclpy fixes a call site's severity at its first call.
        if level == 'error':
            self.get_logger().error(text)
        else:
            self.get_logger().warning(text)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        self._executor.receive(trajectory_from_msg(msg), self._now())

    def _declare(self, ros_name: str, default: object) -> object:
        descriptor = ParameterDescriptor(read_only=ros_name in jtc_rules.READ_ONLY)
        if default == [] and ros_name in _STRING_ARRAYS:
            # rclpy types an empty-list default as a byte array: declare the type only, so an
            # unset `command_joints` reads as "not set" (upstream: []) and a file can set it.
            value = self.declare_parameter(ros_name, Parameter.Type.STRING_ARRAY,
                                           descriptor).value
            return [] if value is None else value
        return self.declare_parameter(ros_name, default, descriptor).value

    def _on_set_parameters(self, changed: list[Parameter]) -> SetParametersResult:
        known = set(jtc_rules.ROS_NAMES.values())
        values = {p.name: p.value for p in changed if p.name in known}
        if not values:
            return SetParametersResult(successful=True)
        try:
            params = jtc_rules.with_values(self._executor.params, values)
        except (TypeError, ValueError) as err:
            return SetParametersResult(successful=False, reason=str(err))
        reason = jtc_rules.check_configuration(params) or _sim_support(params)
        if reason:
            return SetParametersResult(successful=False, reason=reason)
        self._executor.set_params(params)
        return SetParametersResult(successful=True)


def _sim_support(params: JtcParams) -> str | None:
    """Return why the simulated hardware cannot run `params`, or None."""
    if tuple(params.command_interfaces) != SIM_COMMAND_INTERFACES:
        return (f'sim: only command_interfaces {list(SIM_COMMAND_INTERFACES)} are simulated, '
                f'got {list(params.command_interfaces)}')
    extra = [s for s in params.state_interfaces if s not in SIM_STATE_INTERFACES]
    if extra:
        return f'sim: the simulated hardware has no {extra} state interfaces'
    if params.command_joints and tuple(params.command_joints) != tuple(params.joints):
        return 'sim: command_joints other than joints (passive joints) are not simulated'
    return None
