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

parallel_gripper_action_controller (the package parallel_gripper_controller, which replaces
gripper_controllers from Kilted on) serves control_msgs/action/ParallelGripperCommand with the
same check_for_success, stall clock, preemption and cancel. Its rules, from
parallel_gripper_controller/include/parallel_gripper_controller/
parallel_gripper_action_controller_impl.hpp @ 89446c8f (branch unverified; the only stored
version), where it differs:

- A goal whose command (a sensor_msgs/JointState) has not exactly one position is rejected
  ("Received action goal with wrong number of position values, expects 1, got N",
  goal_callback); the command's joint names are not read.
- On acceptance (accepted_callback) the command's velocity[0] and effort[0] are used only when
  the max_velocity_interface / max_effort_interface parameters name an interface to write
  them to; otherwise the max_velocity and max_effort parameters are. A cancel holds with both
  parameters (set_hold_position).
- The result is a JointState `state` with the measured position and an effort
  (computed_command_, which the controller never assigns: the sim reports 0), stalled and
  reached_goal; a preempted or canceled goal's result is empty.
- Parameters and defaults: parallel_gripper_controller/src/
  parallel_gripper_action_controller_parameters.yaml @ 6b44ba8e (branch unverified): max_effort
  10.0, max_velocity 0.1, stall_timeout >= 0, state_interfaces [position, velocity] (on_activate
  refuses a list without both). The simulated finger has no max-effort or max-velocity command
  interface, so the sim's node refuses to name one, as the controller_manager would.
"""

from collections.abc import Hashable, Sequence
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
            self._finish(SUCCEEDED, GripperResult(position, self._result_effort(), False, True))
        elif abs(velocity) > settings.stall_velocity_threshold:
            self._last_movement = now
        elif now - self._last_movement > settings.stall_timeout:
            status = SUCCEEDED if settings.allow_stalling else ABORTED
            self._finish(status, GripperResult(position, self._result_effort(), True, False))

    def _result_effort(self) -> float:
        return self._effort

    def _finish(self, status: str, result: GripperResult) -> None:
        self._outcomes.append(Outcome(self._goal, status, result))
        self._goal = None


@dataclass(frozen=True)
class ParallelGripperSettings(GripperSettings):
    """
    parallel_gripper_action_controller's parameters, upstream's names and defaults.

    parallel_gripper_controller/src/parallel_gripper_action_controller_parameters.yaml
    @ 6b44ba8e (branch unverified).
    """

    max_effort: float = 10.0
    max_velocity: float = 0.1
    max_effort_interface: str = ''
    max_velocity_interface: str = ''
    state_interfaces: tuple[str, ...] = ('position', 'velocity')

    def problem(self) -> str:
        """Why these settings cannot configure and activate the controller, or ''."""
        found = super().problem()
        if found:
            return found
        if self.stall_timeout < 0.0 or self.max_velocity < 0.0:
            return 'stall_timeout and max_velocity must be >= 0'
        for kind in ('position', 'velocity'):
            if kind not in self.state_interfaces:
                return f'Expected 1 {kind} state interface'
        return ''

    def missing_interface(self, available: Sequence[str]) -> str:
        """Return the claimed interface the hardware lacks, as a refusal, or ''."""
        for interface in (self.max_effort_interface, self.max_velocity_interface):
            if interface and interface not in available:
                return f"command interface '{interface}' does not exist on this hardware"
        return ''


def check_parallel_goal(positions: Sequence[float]) -> str:
    """Why a ParallelGripperCommand goal is rejected, or '' (upstream's count, then finite)."""
    if len(positions) != 1:
        return ('Received action goal with wrong number of position values, expects 1, got '
                f'{len(positions)}')
    if not math.isfinite(positions[0]):
        return f'goal rejected: position {positions[0]} must be finite'
    return ''


class ParallelGripperAction(GripperAction):
    """parallel_gripper_action_controller: GripperAction's cycle with its own goals."""

    settings: ParallelGripperSettings

    def __init__(self, settings: ParallelGripperSettings) -> None:
        """Configure with `settings` and activate; ValueError if they are unusable."""
        super().__init__(settings)
        self._max_velocity = settings.max_velocity

    @property
    def max_velocity(self) -> float:
        """Return the velocity limit the controller would write (a speed interface's value)."""
        return self._max_velocity

    @property
    def max_effort(self) -> float:
        """Return the effort limit the controller would write (an effort interface's value)."""
        return self._max_effort

    def accept_command(self, goal_id: Hashable, positions: Sequence[float],
                       velocities: Sequence[float], efforts: Sequence[float],
                       now: float) -> None:
        """Make `goal_id` active; its velocity and effort count only with an interface."""
        settings = self.settings
        use_velocity = bool(settings.max_velocity_interface) and len(velocities) > 0
        use_effort = bool(settings.max_effort_interface) and len(efforts) > 0
        self.accept(goal_id, positions[0],
                    float(efforts[0]) if use_effort else settings.max_effort, now)
        self._max_velocity = float(velocities[0]) if use_velocity else settings.max_velocity

    def _hold(self) -> None:
        super()._hold()
        self._max_velocity = self.settings.max_velocity

    def _result_effort(self) -> float:
        # Upstream reports computed_command_, which it never assigns.
        return 0.0
