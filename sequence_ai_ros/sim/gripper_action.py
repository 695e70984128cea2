"""
gripper_action_controller's node: `~/gripper_cmd` (control_msgs/GripperCommand) over the core.

The rules, with their upstream citations (ros-controls/ros2_controllers,
gripper_controllers), are in sequence_ai_ros/sim/gripper_rules.py; this module declares the
parameters and serves the action with rclpy.
"""

from collections.abc import Sequence
import math
import threading
from typing import Any

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import GoalEvent, ServerGoalHandle
from rclpy.node import Node
from rclpy.task import Future
from sequence_ai_ros.sim.controller_base import POSITION, SwitchedController
from sequence_ai_ros.sim.gripper_rules import (
    CANCELED,
    check_goal,
    GripperAction,
    GripperSettings,
    SUCCEEDED,
)
from sequence_ai_ros.world import arm_model

ACCEPTED_LOG = 'Received & accepted new action goal'


def gripper_command_type() -> Any:
    """Return control_msgs/action/GripperCommand; ImportError naming the package if absent."""
    try:
        from control_msgs.action import GripperCommand
    except ImportError as err:
        raise ImportError(
            'gripper_action_controller needs the ROS 2 package control_msgs '
            '(control_msgs/action/GripperCommand), which is not on PyPI: install the ROS '
            "distribution's ros-<distro>-control-msgs (or a ros-control-msgs wheel built "
            'for this rclpy)') from err
    return GripperCommand


def _at_least(low: float) -> list[FloatingPointRange]:
    return [FloatingPointRange(from_value=low, to_value=math.inf, step=0.0)]


def declare_settings(node: Node, joint: str) -> GripperSettings:
    """Declare upstream's parameters on `node` (its yaml's defaults and ranges); read them."""
    defaults = GripperSettings(joint)
    described = {
        'action_monitor_rate': ('Hz', _at_least(0.1)),
        'joint': ('the gripper joint whose position interface is claimed', None),
        'goal_tolerance': ('|goal - position| below which the goal succeeds', _at_least(0.0)),
        'max_effort': ('Max allowable effort', _at_least(0.0)),
        'allow_stalling': ('Allow stalling will make the action server return success if the '
                           'gripper stalls when moving to the goal', None),
        'stall_velocity_threshold': ('stall velocity threshold', None),
        'stall_timeout': ('stall timeout', None),
    }
    values = {}
    for name, (text, ranges) in described.items():
        descriptor = ParameterDescriptor(description=text, read_only=name == 'joint')
        if ranges:
            descriptor.floating_point_range = ranges
        values[name] = node.declare_parameter(name, getattr(defaults, name), descriptor).value
    return GripperSettings(**values)


class GripperActionController(SwitchedController, Node):
    """
    The gripper_action_controller node: `~/gripper_cmd` GripperCommand, SimController.

    Parameters are read once, at start-up (upstream: on configure); results go out from a
    timer at action_monitor_rate. Spin it on a SingleThreadedExecutor: rclpy 9.1's
    EventsExecutor answered no goal of any rclpy action server in our check, a bare one too.
    """

    def __init__(self, joint: str = arm_model.GRIPPER_JOINT,
                 name: str = 'gripper_action_controller', **kwargs: Any) -> None:
        """Create the node and its action server; ImportError without control_msgs."""
        self._action = gripper_command_type()
        super().__init__(name, **kwargs)
        try:
            self._core = GripperAction(declare_settings(self, joint))
        except ValueError:
            self.destroy_node()
            raise
        self._lock = threading.Lock()
        self._endings: dict[bytes, Future] = {}
        self._server = ActionServer(
            self, self._action, '~/gripper_cmd', execute_callback=self._execute,
            goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_cancel)
        rate = self._core.settings.action_monitor_rate
        self.create_timer(1.0 / rate, self._monitor)
        self.get_logger().info(f'Action status changes will be monitored at {rate}Hz.')

    @property
    def claimed_joints(self) -> Sequence[str]:
        """Return the one joint whose position interface this controller writes."""
        return (self._core.settings.joint,)

    @property
    def command_interface(self) -> str:
        """Return 'position': upstream's position adapter."""
        return POSITION

    def update(self, now: float, position: np.ndarray, velocity: np.ndarray
               ) -> np.ndarray | None:
        """Return the finger's position command after this cycle (None: nothing written)."""
        with self._lock:
            command = self._core.update(now, float(position[0]), float(velocity[0]))
        return None if command is None else np.array([command])

    def destroy_node(self) -> None:
        """Destroy the action server, then the node."""
        server = getattr(self, '_server', None)
        if server is not None:
            server.destroy()
        super().destroy_node()

    def _now(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_goal(self, goal: Any) -> GoalResponse:
        reason = check_goal(goal.command.position, goal.command.max_effort)
        if reason:
            self.get_logger().error(reason)
            return GoalResponse.REJECT
        self.get_logger().info(ACCEPTED_LOG)
        return GoalResponse.ACCEPT

    def _on_accepted(self, goal_handle: ServerGoalHandle) -> None:
        key = bytes(goal_handle.goal_id.uuid)
        command = goal_handle.request.command
        # Tied to the executor, the future wakes it when done: the result leaves at that tick.
        ending: Future = Future(executor=self.executor)
        with self._lock:
            self._endings[key] = ending
            self._core.accept(key, command.position, command.max_effort, self._now())
        goal_handle.execute()

    def _on_cancel(self, goal_handle: ServerGoalHandle) -> CancelResponse:
        self.get_logger().info('Got request to cancel goal')
        with self._lock:
            if self._core.cancel(bytes(goal_handle.goal_id.uuid)):
                self.get_logger().info(
                    'Canceling active action goal because cancel callback received.')
        return CancelResponse.ACCEPT

    def _monitor(self) -> None:
        with self._lock:
            outcomes = self._core.pop_outcomes()
            endings = [self._endings.get(o.goal_id) for o in outcomes]
        for outcome, ending in zip(outcomes, endings):
            if ending is not None:
                ending.set_result(outcome)

    async def _execute(self, goal_handle: ServerGoalHandle) -> Any:
        key = bytes(goal_handle.goal_id.uuid)
        outcome = await self._endings[key]
        with self._lock:
            del self._endings[key]
        if outcome.status == CANCELED:
            if not goal_handle.is_cancel_requested:
                # Preempted: upstream's goal handle ends CANCELED; rclpy's only way from
                # EXECUTING is through CANCELING, which it exposes to cancel requests only.
                goal_handle._update_state(GoalEvent.CANCEL_GOAL)
            goal_handle.canceled()
        elif outcome.status == SUCCEEDED:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        r = outcome.result
        return self._action.Result(position=r.position, effort=r.effort, stalled=r.stalled,
                                   reached_goal=r.reached_goal)
