"""
Which simulated controllers the sim_arm runs: a registry, name -> factory.

The sim parameters `arm_controller` and `gripper_controller` pick one entry each; the entry's
name is also the controller's node name, as a controller's name is in ros2_control. The arm
controller claims the 7 arm joints, the gripper controller the finger joint, as on a real arm
where the gripper has its own controller. The gripper's default is a one-joint
joint_trajectory_controller, which needs nothing beyond the PyPI wheels; the
gripper_action_controller needs control_msgs.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rclpy.node import Node
from sequence_ai_ros.sim import jtc_rules
from sequence_ai_ros.sim.arm import ARM_JOINTS, GRIPPER_JOINT
from sequence_ai_ros.sim.controller_base import POSITION, SimController, VELOCITY
from sequence_ai_ros.sim.forward_command import ForwardCommandController
from sequence_ai_ros.sim.jtc_controller import JointTrajectoryControllerNode

DEFAULT_ARM_CONTROLLER = 'joint_trajectory_controller'
DEFAULT_GRIPPER_CONTROLLER = 'gripper_trajectory_controller'


@dataclass(frozen=True)
class ControllerSpec:
    """What a factory is told: the controller's name, its joints, distro and cycle period."""

    name: str
    joints: tuple[str, ...]
    distro: str
    update_period: float
    # The controller_manager enforces limits update by update: a forward controller's
    # commands are then timed by their DDS reception (the sim spins single-threaded).
    timed_arrivals: bool = False


# A factory builds the controller (a node, in the sim's context: node_kwargs carry it).
ControllerFactory = Callable[..., SimController]


def _joint_trajectory_controller(spec: ControllerSpec, **node_kwargs: Any) -> SimController:
    return JointTrajectoryControllerNode(spec.name, spec.joints, spec.distro,
                                         spec.update_period, **node_kwargs)


def _forward_controller(interface: str) -> ControllerFactory:
    def build(spec: ControllerSpec, **node_kwargs: Any) -> SimController:
        # Humble's controller_manager keeps a failing controller active; Jazzy's deactivates it.
        return ForwardCommandController(spec.joints, interface, spec.name,
                                        deactivate_on_error=spec.distro != 'humble',
                                        reception_times=spec.timed_arrivals, **node_kwargs)
    return build


def _gripper_action_controller(spec: ControllerSpec, **node_kwargs: Any) -> SimController:
    from sequence_ai_ros.sim.gripper_action import GripperActionController
    (joint,) = spec.joints
    return GripperActionController(joint, spec.name, **node_kwargs)


ARM_CONTROLLERS: dict[str, ControllerFactory] = {
    'joint_trajectory_controller': _joint_trajectory_controller,
    'forward_position_controller': _forward_controller(POSITION),
    'forward_velocity_controller': _forward_controller(VELOCITY),
}
GRIPPER_CONTROLLERS: dict[str, ControllerFactory] = {
    'gripper_trajectory_controller': _joint_trajectory_controller,
    'gripper_forward_position_controller': _forward_controller(POSITION),
    # Needs control_msgs, and a SingleThreadedExecutor (see sim/gripper_action.py).
    'gripper_action_controller': _gripper_action_controller,
}
# Controllers that rclpy's EventsExecutor cannot serve (action servers, rclpy 9.1).
NEEDS_SINGLE_THREADED = frozenset({'gripper_action_controller'})
# ... nor its forward controllers' callbacks given the message info (timed_arrivals).
FORWARD_CONTROLLERS = frozenset({'forward_position_controller', 'forward_velocity_controller',
                                 'gripper_forward_position_controller'})


def needs_single_threaded(arm: str, gripper: str, timed_arrivals: bool) -> bool:
    """Return whether the sim must spin these controllers on a SingleThreadedExecutor."""
    chosen = {arm, gripper}
    return bool(chosen & NEEDS_SINGLE_THREADED) or \
        (timed_arrivals and bool(chosen & FORWARD_CONTROLLERS))


def controller_node_options(node: Node, argv: Sequence[str]) -> dict[str, Any]:
    """
    Return the Node keyword arguments of the controllers started beside `node`.

    As ros2_control's controller_manager builds its controllers' node options from its own
    arguments minus the remap of its node name: a launch file's `name='sim_arm'` is a global
    `-r __node:=sim_arm`, which would otherwise rename every controller to sim_arm. The rest
    of the process's ROS arguments (namespace, --params-file, -p, log levels) still apply.
    """
    args, ros_section, skip = [], False, False
    for i, token in enumerate(argv):
        if skip:
            skip = False
            continue
        if token == '--ros-args':
            ros_section = True
        elif token == '--':
            ros_section = False
        elif ros_section and token in ('-r', '--remap') and i + 1 < len(argv) \
                and argv[i + 1].split(':=')[0].split(':')[-1] == '__node':
            skip = True
            continue
        if ros_section or token in ('--ros-args', '--'):
            args.append(token)
    return {'context': node.context, 'namespace': node.get_namespace(), 'cli_args': args,
            'use_global_arguments': False}


def build(arm: str, gripper: str, distro: str, update_period: float,
          timed_arrivals: bool = False, **node_kwargs: Any) -> list[SimController]:
    """Build the arm and gripper controllers; ValueError naming the choices if one is unknown."""
    if distro not in jtc_rules.DISTROS:
        raise ValueError(f'controller_distro must be one of {list(jtc_rules.DISTROS)}, '
                         f"got '{distro}'")
    built = []
    for kind, name, registry, joints in (('arm_controller', arm, ARM_CONTROLLERS, ARM_JOINTS),
                                         ('gripper_controller', gripper, GRIPPER_CONTROLLERS,
                                          (GRIPPER_JOINT,))):
        if name not in registry:
            raise ValueError(f"{kind} '{name}' is not one of {sorted(registry)}")
        spec = ControllerSpec(name, tuple(joints), distro, update_period, timed_arrivals)
        built.append(registry[name](spec, **node_kwargs))
    return built
