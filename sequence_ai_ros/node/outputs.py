"""
The node's command outputs: the arm on its controller's interface, the gripper on its own.

Commands arrive in model units (joints, then the gripper 0..1); this module is the one place
that splits them, maps the gripper to its joint's units and publishes them in the output mode's
message. A hold replaces whatever was sent before, at once, on the arm's interface; the gripper
is left where it is (a grasp must not open because the arm stopped).
"""

from collections.abc import Callable, Sequence
import math
from typing import Any

from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory

from .arm_output import (
    FINAL_REST_S,
    forward_message,
    FORWARD_POSITION,
    FORWARD_VELOCITY,
    hold_trajectory,
    PLAN,
    plan_trajectory,
    stream_trajectory,
    TRAJECTORY_MODES,
)
from .commands import Command
from .forward_output import ForwardPositionOutput
from .gripper import GripperOutput, GripperScale, WITH_ARM
from .params import NodeConfig

__all__ = ['CommandOutputs']

# The hold is reached this long after receipt at the least (a 1 kHz rate would be a jolt).
MIN_HOLD_S = 0.05


class CommandOutputs:
    """Publishes commands, plans ahead and holds for the configured controllers."""

    def __init__(self, node: Any, config: NodeConfig,
                 measured: Callable[[], Sequence[float] | None]) -> None:
        """Create the publishers; `measured` gives the latest finite positions (model units)."""
        self.mode = config.output_mode
        self.config = config
        self.scale = GripperScale(config.gripper_open_position, config.gripper_closed_position)
        self._joints = len(config.joint_names)
        self._gripper_in_arm = bool(config.gripper_joint) and \
            config.gripper_interface == WITH_ARM
        self.arm_joints = list(config.joint_names) + \
            ([config.gripper_joint] if self._gripper_in_arm else [])
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        trajectory = self.mode in TRAJECTORY_MODES
        topic = f'{config.controller_name}/{"joint_trajectory" if trajectory else "commands"}'
        self.arm_topic = topic
        self._node = node
        self._measured_positions = measured
        self._publisher = node.create_lifecycle_publisher(
            JointTrajectory if trajectory else Float64MultiArray, topic, reliable)
        self.gripper: GripperOutput | None = None
        if config.gripper_joint and not self._gripper_in_arm:
            self.gripper = GripperOutput(
                node, config.gripper_interface, self._gripper_name(config),
                config.gripper_joint, self.scale, max_effort=config.gripper_max_effort,
                threshold=config.gripper_threshold, min_change=config.gripper_min_change)
        self.planned_s = 0.0
        self.on_publish: Any = None  # told each arm message published (episode recording)
        # forward_position at forward_output_rate_hz: the steps as lines (forward_output.py).
        self._lines: ForwardPositionOutput | None = None
        if self.mode == FORWARD_POSITION and config.forward_output_rate_hz > 0:
            self._lines = ForwardPositionOutput(node, self._publish,
                                                config.forward_output_rate_hz, self._measured)

    def send(self, command: Command, ahead: Sequence[Command], period_s: float,
             first_s: float | None = None) -> None:
        """
        Publish one step (and, for trajectory_plan, the checked plan after it).

        trajectory_plan: `command` is due `first_s` after receipt (default one period).
        """
        positions = self._arm_positions(command)
        if self.mode == PLAN:
            steps = [command, *ahead]
            first = period_s if first_s is None else first_s
            self.planned_s = first + (len(steps) - 1) * period_s
            message: Any = plan_trajectory(self.arm_joints, [self._arm_command(s) for s in steps],
                                           len(self.arm_joints), period_s, first)
        elif self.mode in TRAJECTORY_MODES:
            self.planned_s = period_s
            message = stream_trajectory(self.arm_joints, positions, period_s)
        elif self.mode == FORWARD_VELOCITY:
            self.planned_s = math.inf  # the controller keeps a velocity until told otherwise
            message = forward_message(command.velocities[:self._joints])
        elif self._lines is not None:
            self.planned_s = period_s  # the step is reached one period from now
            self._lines.step(positions, period_s)
            message = None
        else:
            self.planned_s = 0.0
            message = forward_message(positions)
        if message is not None:
            self._publish(message)
        if self.gripper is not None:
            self.gripper.command(command.positions[self._joints], period_s)

    def hold(self, positions: Sequence[float], period_s: float, final: bool = False) -> None:
        """
        Replace anything sent before with a stop at `positions` (model units), at once.

        `final`: the episode's last message; a trajectory hold then rests FINAL_REST_S at
        `positions`, so the controller's cmd_timeout does not end a finished episode with a
        WARN (arm_output's docstring).
        """
        self.planned_s = 0.0
        if not positions:
            return
        arm = self._arm_positions(Command(tuple(positions), ()))
        if self.mode in TRAJECTORY_MODES:
            message: Any = hold_trajectory(self.arm_joints, arm, max(period_s, MIN_HOLD_S),
                                           FINAL_REST_S if final else 0.0)
        elif self.mode == FORWARD_VELOCITY:
            message = forward_message([0.0] * self._joints)
        elif self._lines is not None:
            # Ending at the step the line is heading to is that line's own end, at rest: a
            # jump to it would be the burst the lines are there to avoid.
            if self._lines.heading_to() != [float(p) for p in arm]:
                self._lines.hold(arm)
            return
        else:
            message = forward_message(arm)
        self._publish(message)

    def new_episode(self) -> None:
        """Forget the gripper's last goal and the last line, so the episode starts afresh."""
        if self.gripper is not None:
            self.gripper.reset()
        if self._lines is not None:
            self._lines.reset()

    def close(self) -> None:
        """Destroy the publishers, the lines' timer and the gripper's client."""
        if self._lines is not None:
            self._lines.close()
            self._lines = None
        if self.gripper is not None:
            self.gripper.close()
            self.gripper = None
        if self._publisher is not None:
            self._node.destroy_lifecycle_publisher(self._publisher)
            self._publisher = None

    def _publish(self, message: Any) -> None:
        self._publisher.publish(message)
        if self.on_publish is not None:
            self.on_publish(message)

    def _measured(self) -> list[float] | None:
        positions = self._measured_positions()
        return None if positions is None else self._arm_positions(Command(tuple(positions), ()))

    def _arm_command(self, command: Command) -> Command:
        velocities = list(command.velocities[:self._joints])
        if self._gripper_in_arm and len(command.velocities) > self._joints:
            span = self.scale.closed_position - self.scale.open_position
            velocities.append(command.velocities[self._joints] * span)
        return Command(tuple(self._arm_positions(command)), tuple(velocities))

    def _arm_positions(self, command: Command) -> list[float]:
        arm = list(command.positions[:self._joints])
        if self._gripper_in_arm and len(command.positions) > self._joints:
            arm.append(self.scale.to_joint(command.positions[self._joints]))
        return arm

    @staticmethod
    def _gripper_name(config: NodeConfig) -> str:
        if config.gripper_interface == 'action':
            return config.gripper_action_name or f'{config.gripper_controller}/gripper_cmd'
        suffix = 'joint_trajectory' if config.gripper_interface == 'trajectory' else 'commands'
        return f'{config.gripper_controller}/{suffix}'
