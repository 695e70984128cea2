"""
gripper_action_controller as ros2_control runs it: a ROS-free core and the controller's node.

The rules are ros-controls/ros2_controllers'. Each cites `<path> @ <commit> (<branch>),
lines A-B`; unless another file is named, the file is
gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
@ 14728ce2 (branch unverified: it reads state with get_value() and parameters through
generate_parameter_library; no package.xml or CHANGELOG.rst is stored at that commit),
position interface. That parallel_gripper_controller keeps these rules was not checked in a
stored version.

- Every goal is accepted (goal_callback, lines 77-83) and replaces the active one, which ends
  CANCELED with an empty result (preempt_active_goal, lines 27-37, called from
  accepted_callback, lines 85-112, at line 93). Its position goes to the position interface
  at once (gripper_controllers/include/gripper_controllers/hardware_interface_adapter.hpp
  @ 0ddf0ff8 (branch unverified), lines 82-89): the finger's speed is the hardware's, not
  the controller's.
- Each cycle (update, lines 56-75, and check_for_success, lines 146-192): |goal - position| <
  goal_tolerance succeeds with reached_goal (lines 156-165); otherwise |velocity| >
  stall_velocity_threshold restarts the stall clock (lines 168-171; started at acceptance,
  line 104), and stall_timeout without motion ends the goal stalled: ABORTED, or SUCCEEDED
  if allow_stalling (lines 172-190). The result holds the measured position and the previous
  cycle's effort command (the goal's max_effort; lines 68-73). The goal's position stays
  commanded after it ends: a blocked gripper keeps pressing.
- A cancel is accepted; for the active goal the command becomes the measured position with the
  max_effort parameter and the goal ends CANCELED (cancel_callback and set_hold_position,
  lines 114-144). Activation holds the measured position (on_activate, lines 284-286).
  Results go out at action_monitor_rate (lines 108-111).
- Parameters, defaults and ranges:
  gripper_controllers/src/gripper_action_controller_parameters.yaml @ 1bad1e37 (branch
  unverified), lines 1-43; an empty joint is refused (on_configure, lines 211-216).

So a goal fails realistically when the finger cannot come within goal_tolerance of it: beyond
the finger's travel (the hardware stops at its limit) or blocked by something in the grip.
One deliberate difference: a goal with a non-finite position or max_effort is rejected
(upstream would forward it), as forward_command_controller drops such commands.
"""

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
import math
import threading
from typing import Any

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import GoalEvent, ServerGoalHandle
from rclpy.node import Node
from rclpy.task import Future
from sequence_ai_ros.sim.controller_base import POSITION
from sequence_ai_ros.world import arm_model

SUCCEEDED, ABORTED, CANCELED = 'succeeded', 'aborted', 'canceled'
ACCEPTED_LOG = 'Received & accepted new action goal'


@dataclass(frozen=True)
class GripperSettings:
    """
    The controller's parameters, upstream's names and defaults.

    gripper_controllers/src/gripper_action_controller_parameters.yaml @ 1bad1e37 (branch
    unverified), lines 1-43.
    """

    joint: str
    action_monitor_rate: float = 20.0
    goal_tolerance: float = 0.01
    max_effort: float = 0.0
    allow_stalling: bool = False
    stall_velocity_threshold: float = 0.001
    stall_timeout: float = 1.0

    def problem(self) -> str:
        """
        Why these settings cannot configure the controller (upstream's checks), or ''.

        The empty joint:
        gripper_controllers/include/gripper_controllers/gripper_action_controller_impl.hpp
        @ 14728ce2 (branch unverified), on_configure, lines 211-216; the ranges:
        gripper_controllers/src/gripper_action_controller_parameters.yaml @ 1bad1e37 (branch
        unverified), lines 6-8, 17-19, 25-27. Non-finite values are the sim's refusal.
        """
        if not self.joint:
            return 'Joint name cannot be empty'
        numbers = {k: v for k, v in vars(self).items() if isinstance(v, float)}
        bad = [name for name, value in numbers.items() if not math.isfinite(value)]
        if bad:
            return f'not finite: {", ".join(bad)}'
        if self.action_monitor_rate < 0.1:
            return 'action_monitor_rate must be >= 0.1'
        if self.goal_tolerance < 0.0 or self.max_effort < 0.0:
            return 'goal_tolerance and max_effort must be >= 0'
        return ''


@dataclass(frozen=True)
class GripperResult:
    """control_msgs/action/GripperCommand's result (and feedback) fields."""

    position: float = 0.0
    effort: float = 0.0
    stalled: bool = False
    reached_goal: bool = False


@dataclass(frozen=True)
class Outcome:
    """How a goal ended: SUCCEEDED, ABORTED or CANCELED, with its result."""

    goal_id: Hashable
    status: str
    result: GripperResult


def check_goal(position: float, max_effort: float) -> str:
    """Why a goal is rejected, or '' (upstream accepts all; non-finite numbers are refused)."""
    if not (math.isfinite(position) and math.isfinite(max_effort)):
        return f'goal rejected: position {position} and max_effort {max_effort} must be finite'
    return ''


class GripperAction:
    """
    One gripper joint's controller, on whatever clock the caller passes (seconds).

    Thread-unsafe by design: the node serialises calls.
    """

    def __init__(self, settings: GripperSettings) -> None:
        """Configure with `settings` and activate; ValueError if they are unusable."""
        if settings.problem():
            raise ValueError(settings.problem())
        self.settings = settings
        self.active = True
        self._goal: Hashable | None = None
        self._command: float | None = None
        self._max_effort = settings.max_effort
        self._effort = 0.0
        self._hold_pending = True
        self._last_movement = 0.0
        self._measured: float | None = None
        self._outcomes: list[Outcome] = []

    @property
    def active_goal(self) -> Hashable | None:
        """Return the goal being executed, or None."""
        return self._goal

    @property
    def command(self) -> float | None:
        """Return the position command the controller writes (None before its first update)."""
        return self._command

    def accept(self, goal_id: Hashable, position: float, max_effort: float, now: float) -> None:
        """Make `goal_id` the active goal at `now`; the one it replaces ends CANCELED."""
        if self._goal is not None:
            self._outcomes.append(Outcome(self._goal, CANCELED, GripperResult()))
        self._goal = goal_id
        self._command, self._max_effort = float(position), float(max_effort)
        self._hold_pending = False
        self._last_movement = now

    def cancel(self, goal_id: Hashable) -> bool:
        """Cancel `goal_id` if it is the active goal (then hold where the finger is)."""
        if goal_id != self._goal or self._goal is None:
            return False
        self._hold()
        self._outcomes.append(Outcome(self._goal, CANCELED, GripperResult()))
        self._goal = None
        return True

    def update(self, now: float, position: float, velocity: float) -> float | None:
        """
        Run one control cycle with the finger's measured state; return the position command.

        While inactive nothing is evaluated and the interface keeps its last value.
        """
        if not self.active:
            return self._command
        self._measured = float(position)
        if self._hold_pending:
            self._hold()
        if self._command is not None:
            self._check_for_success(now, self._command - position, position, velocity)
        self._effort = self._max_effort
        return self._command

    def pop_outcomes(self) -> list[Outcome]:
        """Return the goals that ended since the last call, oldest first."""
        outcomes, self._outcomes = self._outcomes, []
        return outcomes

    def activate(self) -> None:
        """Start updating; the first cycle holds the measured position."""
        self.active = True
        self._hold_pending = True

    def deactivate(self) -> None:
        """Stop updating (upstream leaves an active goal as it is)."""
        self.active = False

    def _hold(self) -> None:
        if self._measured is None:  # nothing measured yet: hold at the first update
            self._hold_pending = True
            return
        self._command, self._max_effort = self._measured, self.settings.max_effort
        self._hold_pending = False

    def _check_for_success(self, now: float, error: float, position: float,
                           velocity: float) -> None:
        if self._goal is None:
            return
        settings = self.settings
        if abs(error) < settings.goal_tolerance:
            self._finish(SUCCEEDED, GripperResult(position, self._effort, False, True))
        elif abs(velocity) > settings.stall_velocity_threshold:
            self._last_movement = now
        elif now - self._last_movement > settings.stall_timeout:
            status = SUCCEEDED if settings.allow_stalling else ABORTED
            self._finish(status, GripperResult(position, self._effort, True, False))

    def _finish(self, status: str, result: GripperResult) -> None:
        self._outcomes.append(Outcome(self._goal, status, result))
        self._goal = None


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


class GripperActionController(Node):
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

    def activate(self) -> None:
        """Activate, as controller_manager's switch_controller does: hold where it is."""
        with self._lock:
            self._core.activate()

    def deactivate(self) -> None:
        """Deactivate, as controller_manager's switch_controller does."""
        with self._lock:
            self._core.deactivate()

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
