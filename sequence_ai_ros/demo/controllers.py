"""
Which simulated controller receives each of the node's outputs, for the demo and the tests.

One table: the node's output_mode and gripper_interface on one side, the sim_arm's
arm_controller and gripper_controller on the other, named as in ros2_control.
"""

from pathlib import Path
from typing import Any

from sequence_ai_ros.sim.jtc_rules import DEFAULT_DISTRO, DISTROS
import yaml

ARM_CONTROLLERS = {
    'trajectory_stream': 'joint_trajectory_controller',
    'trajectory_plan': 'joint_trajectory_controller',
    'forward_position': 'forward_position_controller',
    'forward_velocity': 'forward_velocity_controller',
}
GRIPPER_CONTROLLERS = {
    'action': 'gripper_action_controller',
    'trajectory': 'gripper_trajectory_controller',
    'forward_position': 'gripper_forward_position_controller',
}
# DISTROS and DEFAULT_DISTRO are the sim's (whose upstream rules its controllers follow),
# offered here beside the controllers they choose the rules of.
__all__ = ['ARM_CONTROLLERS', 'config_value', 'controller_setup', 'DEFAULT_DISTRO',
           'default_gripper_interface', 'DISTROS', 'GRIPPER_CONTROLLERS']


def default_gripper_interface() -> str:
    """
    Return 'action' where control_msgs has ParallelGripperCommand, else 'trajectory'.

    The shipped controllers file, which the simulated controllers read, names the parallel
    gripper controller; without control_msgs (PyPI only) the gripper takes a trajectory.
    """
    try:
        from control_msgs.action import ParallelGripperCommand  # noqa: F401
    except ImportError:
        return 'trajectory'
    return 'action'


def config_value(config: Path, name: str) -> Any:
    """
    Return the value the node gets for `name` with parameter file `config`.

    The file's value, else the node's declared default: the shipped files give only what is
    model- or arm-specific.
    """
    data = yaml.safe_load(config.read_text()) or {}
    for section in data.values():
        params = (section or {}).get('ros__parameters', {})
        if name in params:
            return params[name]
    from sequence_ai_ros.node.params import PARAMETERS  # rclpy only once a node is started
    return PARAMETERS[name].ros_default


def controller_setup(output_mode: str, gripper_interface: str, distro: str
                     ) -> tuple[list[str], dict[str, Any]]:
    """Return (sim_arm arguments, node parameters) that pair the node with its controllers."""
    arm, gripper = ARM_CONTROLLERS[output_mode], GRIPPER_CONTROLLERS[gripper_interface]
    sim = ['-p', f'arm_controller:={arm}', '-p', f'gripper_controller:={gripper}',
           '-p', f'controller_distro:={distro}']
    node = {'output_mode': output_mode, 'controller_name': arm,
            'gripper_interface': gripper_interface, 'gripper_controller': gripper}
    return sim, node
