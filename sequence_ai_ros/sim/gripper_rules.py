"""
gripper_action_controller's rules, ROS-free: settings, goals, the stall clock, results.

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

from collections.abc import Hashable
from dataclasses import dataclass
import math

SUCCEEDED, ABORTED, CANCELED = 'succeeded', 'aborted', 'canceled'


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
