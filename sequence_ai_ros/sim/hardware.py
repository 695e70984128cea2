"""
The simulated arm's hardware loop: controllers write command interfaces, the arm follows.

As ros2_control's resource manager does, every joint's command interface belongs to at most
one controller, and a second claim is refused at start-up. Each cycle every controller is
updated with its joints' measured state and returns a command per joint: a position is the
joint's desired position, a velocity v becomes q + v * dt, None (or a non-finite value, which
real hardware would refuse) holds those joints where they are. Unclaimed joints hold too.

With a JointLimiter (the controller_manager enforcing the joints' limits, see joint_limits.py)
every command first goes through it, update by update, and a velocity is integrated as
mock_components/GenericSystem integrates it; `on_clamp` hears the first clamp of a cycle.
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
from sequence_ai_ros.sim.forward_command import ForwardCommandController
from sequence_ai_ros.sim.joint_limits import Clamp, JointLimiter


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


class HardwareLoop:
    """Owns the simulated arm and its controllers; :meth:`step` is one control cycle."""

    def __init__(self, arm: SimArm, controllers: Sequence[SimController],
                 joint_names: Sequence[str] = JOINT_NAMES, limiter: JointLimiter | None = None,
                 on_clamp: Callable[[str], None] | None = None) -> None:
        self.arm = arm
        self.controllers = tuple(controllers)
        self.joint_names = tuple(joint_names)
        self.limiter = limiter
        self._on_clamp = on_clamp
        self._indices = claims(self.controllers, self.joint_names)
        # (time, positions) after each controller_manager update of the last step, as a
        # joint_state_broadcaster at the update rate would publish them; one row without a
        # limiter (the physics step is then the only update).
        self.samples: list[tuple[float, np.ndarray]] = []

    def step(self, now: float, dt: float) -> None:
        """Update every controller at `now`, then move the arm for `dt` seconds."""
        arm = self.arm
        desired = arm.position.copy()
        count, period = self.limiter.updates(dt) if self.limiter is not None and dt > 0.0 \
            else (1, dt)
        trace = np.tile(arm.position, (count, 1))
        for controller, idx in zip(self.controllers, self._indices):
            command = controller.update(now, arm.position[idx].copy(), arm.velocity[idx].copy())
            if command is not None:
                command = np.asarray(command, dtype=float)
            if command is None or command.shape != idx.shape or \
                    not np.all(np.isfinite(command)):
                if self.limiter is not None:
                    self.limiter.forget(idx)
                continue
            velocity = controller.command_interface == VELOCITY
            if self.limiter is not None and dt > 0.0:
                desired[idx] = self._limited(controller, idx, command, velocity, now, dt)
                if self.limiter.trace.shape == (count, idx.size):
                    trace[:, idx] = self.limiter.trace
            elif velocity:
                desired[idx] = arm.position[idx] + command * dt
            else:
                desired[idx] = command
        arm.step(desired, dt)
        trace[-1] = arm.position
        self.samples = [(now - dt + (k + 1) * period, row) for k, row in enumerate(trace)]

    def hold(self) -> None:
        """Stop the arm and tell every controller that can to hold where it is."""
        for controller in self.controllers:
            if isinstance(controller, Holdable):
                controller.hold()
        if self.limiter is not None:
            self.limiter.forget()
        self.arm.hold()

    def _limited(self, controller: SimController, idx: np.ndarray, command: np.ndarray,
                 velocity: bool, now: float, dt: float) -> np.ndarray:
        arm, limiter = self.arm, self.limiter
        assert limiter is not None
        speeds = arm.velocity_limits[idx]
        clamp: Clamp | None
        if velocity:
            position, clamp = limiter.velocities(idx, command, arm.position[idx], speeds, dt)
        else:
            # A forward controller writes each message in the update it arrives in and holds
            # it; a trajectory controller samples its trajectory every update.
            arrivals = controller.arrivals() \
                if isinstance(controller, ForwardCommandController) else None
            commands = limiter.schedule(idx, command, arm.position[idx], now - dt, dt,
                                        arrivals)
            position, clamp = limiter.positions(idx, commands, arm.position[idx],
                                                arm.velocity[idx], speeds)
        if clamp is not None and self._on_clamp is not None:
            self._on_clamp(clamp.line(self.joint_names))
        return position
