"""
The gripper's action controller node, `~/gripper_cmd`, over one of two cores.

Which controller it is follows the controller's type, as the controller_manager loads it:
  position_controllers/GripperActionController             control_msgs/GripperCommand
                                                           (gripper_controllers: Humble, Jazzy)
  parallel_gripper_action_controller/GripperActionController
                                                           control_msgs/ParallelGripperCommand
                                                           (parallel_gripper_controller: Jazzy on)
The type is the node's own `type` parameter if one is given (the controller's own block, or -p),
else `<name>.type` in a controller_manager block of the process's --params-file files (where a
controllers file names it for every distro), else the first. Any other type is refused with
the controller_manager's words. The rules, with their upstream
citations (ros-controls/ros2_controllers), are in sequence_ai_ros/sim/gripper_rules.py; this
module declares the parameters and serves the action with rclpy.
"""

from collections.abc import Sequence
import math
from pathlib import Path
import threading
from typing import Any

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import GoalEvent, ServerGoalHandle
from rclpy.node import Node
from rclpy.task import Future
from sequence_ai_ros.node.gripper import import_gripper_action
from sequence_ai_ros.sim.controller_base import POSITION, SwitchedController
from sequence_ai_ros.sim.gripper_rules import (
    CANCELED,
    check_goal,
    check_parallel_goal,
    GripperAction,
    GripperSettings,
    Outcome,
    ParallelGripperAction,
    ParallelGripperSettings,
    SUCCEEDED,
)
from sequence_ai_ros.world import arm_model
import yaml

ACCEPTED_LOG = 'Received & accepted new action goal'
GRIPPER_COMMAND_TYPE = 'position_controllers/GripperActionController'
PARALLEL_TYPE = 'parallel_gripper_action_controller/GripperActionController'
CONTROLLER_TYPES = {GRIPPER_COMMAND_TYPE: 'GripperCommand',
                    PARALLEL_TYPE: 'ParallelGripperCommand'}


def gripper_command_type(action: str = 'GripperCommand') -> Any:
    """Return control_msgs/action/`action`; ImportError naming the package if absent."""
    return import_gripper_action(action, needed_by='the gripper action controller')


def controller_manager_type(cli_args: Sequence[str], name: str) -> str:
    """
    Return `<name>.type` from the controller_manager blocks of the --params-file files, or ''.

    A later file wins, as rcl applies them; a block applies to any controller_manager (its
    namespace is not matched) or to every node (`/**`).
    """
    found = ''
    args = list(cli_args)
    for flag, path in zip(args, args[1:]):
        if flag != '--params-file':
            continue
        data = yaml.safe_load(Path(path).read_text()) or {}
        for node, block in data.items():
            if str(node).rsplit('/', 1)[-1] not in ('controller_manager', '*', '**'):
                continue
            values = (block or {}).get('ros__parameters') or {}
            nested = values.get(name)
            kind = nested.get('type') if isinstance(nested, dict) else values.get(f'{name}.type')
            found = str(kind) if kind else found
    return found


def _at_least(low: float) -> list[FloatingPointRange]:
    return [FloatingPointRange(from_value=low, to_value=math.inf, step=0.0)]


DESCRIBED = {
    'action_monitor_rate': ('Hz', _at_least(0.1)),
    'joint': ('the gripper joint whose position interface is claimed', None),
    'goal_tolerance': ('|goal - position| below which the goal succeeds', _at_least(0.0)),
    'max_effort': ('Max allowable effort', _at_least(0.0)),
    'allow_stalling': ('Allow stalling will make the action server return success if the '
                       'gripper stalls when moving to the goal', None),
    'stall_velocity_threshold': ('stall velocity threshold', None),
    'stall_timeout': ('stall timeout', None),
}
PARALLEL_DESCRIBED = {
    **DESCRIBED,
    'stall_timeout': ('stall timeout', _at_least(0.0)),
    'max_effort': ('Default effort used for grasping (Newtons)', _at_least(0.0)),
    'max_velocity': ('Default target velocity used for grasping (meters/second)',
                     _at_least(0.0)),
    'max_effort_interface': ('Controller will claim the specified effort interface', None),
    'max_velocity_interface': ('Controller will claim the speed specified interface', None),
    'state_interfaces': ('the state interfaces claimed on the joint', None),
}


def declare_settings(node: Node, joint: str, parallel: bool = False) -> GripperSettings:
    """Declare upstream's parameters on `node` (its yaml's defaults and ranges); read them."""
    kind = ParallelGripperSettings if parallel else GripperSettings
    defaults = kind(joint)
    values = {}
    for name, (text, ranges) in (PARALLEL_DESCRIBED if parallel else DESCRIBED).items():
        descriptor = ParameterDescriptor(description=text, read_only=name == 'joint')
        if ranges:
            descriptor.floating_point_range = ranges
        default = getattr(defaults, name)
        value = node.declare_parameter(
            name, list(default) if isinstance(default, tuple) else default, descriptor).value
        values[name] = tuple(value) if isinstance(default, tuple) else value
    return kind(**values)


class GripperActionController(SwitchedController, Node):
    """
    A gripper action controller node: `~/gripper_cmd` on its core, a SimController.

    Parameters are read once, at start-up (upstream: on configure); results go out from a
    timer at action_monitor_rate. Spin it on a SingleThreadedExecutor: rclpy 9.1's
    EventsExecutor answered no goal of any rclpy action server in our check, a bare one too.
    """

    def __init__(self, joint: str = arm_model.GRIPPER_JOINT,
                 name: str = 'gripper_action_controller', **kwargs: Any) -> None:
        """Create the node and its action server; ImportError without control_msgs."""
        from_files = controller_manager_type(kwargs.get('cli_args') or (), name)
        self._action = gripper_command_type(CONTROLLER_TYPES.get(from_files, 'GripperCommand'))
        super().__init__(name, **kwargs)
        try:
            self.controller_type = self.declare_parameter(
                'type', from_files or GRIPPER_COMMAND_TYPE, ParameterDescriptor(
                    description='the controller type: ' + ' or '.join(CONTROLLER_TYPES),
                    read_only=True)).value
            if self.controller_type not in CONTROLLER_TYPES:
                # The controller_manager's words for a type no plugin provides.
                raise ValueError(f"Loader for controller '{name}' (type "
                                 f"'{self.controller_type}') not available")
            self.parallel = self.controller_type == PARALLEL_TYPE
            self._action = gripper_command_type(CONTROLLER_TYPES[self.controller_type])
            settings = declare_settings(self, joint, self.parallel)
            if isinstance(settings, ParallelGripperSettings):
                missing = settings.missing_interface((f'{settings.joint}/{POSITION}',))
                if missing:
                    raise ValueError(missing)
            self._core: GripperAction = ParallelGripperAction(settings) if self.parallel \
                else GripperAction(settings)
        except (ValueError, ImportError):
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
        if self.parallel:
            self.get_logger().info(f'Action status changes will be monitored at {rate:f} Hz.')
            self.get_logger().info(f'Joint name is : {settings.joint}')
        else:
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
        command = goal.command
        reason = check_parallel_goal(list(command.position)) if self.parallel \
            else check_goal(command.position, command.max_effort)
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
            if isinstance(self._core, ParallelGripperAction):
                self._core.accept_command(key, list(command.position), list(command.velocity),
                                          list(command.effort), self._now())
            else:
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
        return self._result(outcome)

    def _result(self, outcome: Outcome) -> Any:
        r = outcome.result
        if not self.parallel:
            return self._action.Result(position=r.position, effort=r.effort,
                                       stalled=r.stalled, reached_goal=r.reached_goal)
        result = self._action.Result(stalled=r.stalled, reached_goal=r.reached_goal)
        if outcome.status != CANCELED:  # a preempted or canceled goal's result is empty
            result.state.position, result.state.effort = [r.position], [r.effort]
        return result
