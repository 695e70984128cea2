"""
The simulated arm's hardware loop: controllers write command interfaces, the arm follows.

As ros2_control's resource manager does, every joint's command interface belongs to at most
one controller, and a second claim is refused at start-up. Each cycle every controller is
updated with its joints' measured state and returns a command per joint: a position is the
joint's desired position, a velocity v becomes q + v * dt, None (or a non-finite value, which
real hardware would refuse) holds those joints where they are. Unclaimed joints hold too.

With a JointLimiter (the controller_manager enforcing the joints' limits, see joint_limits.py)
a physics step runs the controller_manager's updates one by one, as ros2_control_node's loop
runs read, update and write (controller_manager/src/ros2_control_node.cpp; the stored versions
come without a commit, so no lines are cited):

- read: mock_components/GenericSystem with calculate_dynamics
  (hardware_interface/src/mock_components/generic_system.cpp, GenericSystem::read) makes a
  position command the joint's position, its velocity the change over the measured period;
  a velocity command moves the position by the velocity *state* times the period, then
  becomes the state (backward integration). So the state an update reads, and the joint
  state the broadcaster publishes stamped at that update, is what the update before wrote;
- update: every controller at the update's time (the messages that arrived before it), then
  the limiter clamps each command with the measured period; `on_clamp` hears the first
  clamp of a physics step;
- a loop that wakes late runs one update with the measured period and skips the missed ones
  (Kilted's ros2_control_node: "Overrun detected!"): the physics step stands for the loop, so
  a step later than its nominal period runs its first update late, not extra ones.
"""

from collections.abc import Callable, Sequence

import numpy as np
from sequence_ai_ros.sim.arm import JOINT_NAMES, SimArm
from sequence_ai_ros.sim.controller_base import (
    COMMAND_INTERFACES,
    controller_name,
    Holdable,
    SimController,
    VELOCITY,
)
from sequence_ai_ros.sim.joint_limits import JointLimiter


def claims(controllers: Sequence[SimController], joint_names: Sequence[str]) -> list[np.ndarray]:
    """Return each controller's joint indices; ValueError on an unknown or doubly claimed joint."""
    owner: dict[str, str] = {}
    indices = []
    for controller in controllers:
        name = controller_name(controller)
        if controller.command_interface not in COMMAND_INTERFACES:
            raise ValueError(f"{name}: command interface '{controller.command_interface}' is not "
                             f'one of {list(COMMAND_INTERFACES)}')
        for joint in controller.claimed_joints:
            if joint not in joint_names:
                raise ValueError(f"{name} claims joint '{joint}', which the hardware does not "
                                 f'have ({list(joint_names)})')
            if joint in owner:
                raise ValueError(f"joint '{joint}' is claimed by both {owner[joint]} and {name}")
            owner[joint] = name
        indices.append(np.array([list(joint_names).index(j) for j in controller.claimed_joints],
                                dtype=int))
    return indices


def update_times(now: float, dt: float, update_period: float, step_period: float
                 ) -> list[tuple[float, float]]:
    """
    Return (time, measured period) of each controller_manager update of a physics step.

    A step of its nominal length `step_period` runs the updates it spans, `update_period`
    apart, the last at `now`; a late one (an overrun) runs no more, its first with the
    longer measured period; an early one fewer.
    """
    nominal = max(1, round(step_period / update_period))
    count = max(1, min(nominal, round(dt / update_period)))
    first = dt - (count - 1) * update_period
    return [(now - (count - 1 - k) * update_period, first if k == 0 else update_period)
            for k in range(count)]


class HardwareLoop:
    """Owns the simulated arm and its controllers; :meth:`step` is one control cycle."""

    def __init__(self, arm: SimArm, controllers: Sequence[SimController],
                 joint_names: Sequence[str] = JOINT_NAMES, limiter: JointLimiter | None = None,
                 on_clamp: Callable[[str], None] | None = None,
                 step_period: float | None = None) -> None:
        """
        Claim the controllers' joints; ValueError on an unknown or doubly claimed joint.

        `step_period`: the physics step's nominal period (None: each step's own length).
        """
        self.arm = arm
        self.controllers = tuple(controllers)
        self.joint_names = tuple(joint_names)
        self.limiter = limiter
        self.step_period = step_period
        self._on_clamp = on_clamp
        self._indices = claims(self.controllers, self.joint_names)
        self._by_velocity = np.zeros(len(self.joint_names), dtype=bool)
        for controller, idx in zip(self.controllers, self._indices):
            self._by_velocity[idx] = controller.command_interface == VELOCITY
        # What the command interfaces hold after the last update (NaN: nothing, hold).
        self._written = np.full(len(self.joint_names), np.nan)
        # (time, positions, velocities) of each controller_manager update of the last step,
        # as a joint_state_broadcaster at the update rate publishes them; one row without a
        # limiter (the physics step is then the only update).
        self.samples: list[tuple[float, np.ndarray, np.ndarray]] = []

    def step(self, now: float, dt: float) -> None:
        """Update every controller at `now`, then move the arm for `dt` seconds."""
        if self.limiter is not None and dt > 0.0:
            self._run_updates(now, dt)
            return
        arm = self.arm
        desired = arm.position.copy()
        for controller, idx in zip(self.controllers, self._indices):
            command = self._command(controller, idx, now)
            if command is None:
                continue
            if controller.command_interface == VELOCITY:
                desired[idx] = arm.position[idx] + command * dt
            else:
                desired[idx] = command
        arm.step(desired, dt)
        self.samples = [(now, arm.position.copy(), arm.velocity.copy())]

    def hold(self) -> None:
        """Stop the arm and tell every controller that can to hold where it is."""
        for controller in self.controllers:
            if isinstance(controller, Holdable):
                controller.hold()
        if self.limiter is not None:
            self.limiter.forget()
        self._written[:] = np.nan
        self.arm.hold()

    def _command(self, controller: SimController, idx: np.ndarray, now: float
                 ) -> np.ndarray | None:
        """Return the controller's command at `now`, or None where it holds its joints."""
        command = controller.update(now, self.arm.position[idx].copy(),
                                    self.arm.velocity[idx].copy())
        if command is None:
            return None
        command = np.asarray(command, dtype=float)
        if command.shape != idx.shape or not np.all(np.isfinite(command)):
            return None
        return command

    def _run_updates(self, now: float, dt: float) -> None:
        limiter = self.limiter
        assert limiter is not None
        arm, first_clamp, samples = self.arm, None, []
        for at, period in update_times(now, dt, limiter.update_period,
                                       self.step_period or dt):
            self._read(period)
            samples.append((at, arm.position.copy(), arm.velocity.copy()))
            for controller, idx in zip(self.controllers, self._indices):
                command = self._command(controller, idx, at)
                if command is None:
                    limiter.forget(idx)
                    self._written[idx] = np.nan
                    continue
                limit = limiter.velocity if controller.command_interface == VELOCITY \
                    else limiter.position
                self._written[idx], clamp = limit(idx, command, arm.position[idx],
                                                  arm.velocity[idx],
                                                  arm.velocity_limits[idx], period)
                first_clamp = first_clamp or clamp
        self.samples = samples
        if first_clamp is not None and self._on_clamp is not None:
            self._on_clamp(first_clamp.line(self.joint_names))

    def _read(self, period: float) -> None:
        """Read as GenericSystem with calculate_dynamics: the written commands become state."""
        arm, written = self.arm, self._written
        commanded = np.isfinite(written)
        position, velocity = arm.position.copy(), arm.velocity.copy()
        by_position = commanded & ~self._by_velocity
        velocity[by_position] = (written[by_position] - position[by_position]) / period
        position[by_position] = written[by_position]
        by_velocity = commanded & self._by_velocity
        position[by_velocity] += velocity[by_velocity] * period
        velocity[by_velocity] = written[by_velocity]
        velocity[~commanded] = 0.0
        arm.set_state(position, velocity)
