"""The simulated arm's state and its integration step: a velocity-limited position servo."""

from collections.abc import Sequence

import numpy as np
from sequence_ai_ros.world import arm_model

ARM_JOINTS = arm_model.JOINT_NAMES
GRIPPER_JOINT = arm_model.GRIPPER_JOINT
JOINT_NAMES = ARM_JOINTS + (GRIPPER_JOINT,)

# panda_finger_joint1 in metres, as a Franka Hand reports it: 0.04 open .. 0.0 closed.
_LOWER = np.append(arm_model.LOWER_LIMITS, arm_model.FINGER_CLOSED_M)
_UPPER = np.append(arm_model.UPPER_LIMITS, arm_model.FINGER_OPEN_M)
_VELOCITY = np.append(arm_model.VELOCITY_LIMITS, arm_model.FINGER_SPEED_MPS)


def initial_state(values: Sequence[float]) -> np.ndarray:
    """All 8 joint positions from 7 arm joints (fingers open) or 8 values; ValueError if not."""
    q = np.array(values, dtype=float)
    if q.size == len(JOINT_NAMES) - 1:
        q = np.append(q, arm_model.FINGER_OPEN_M)
    if q.shape != (len(JOINT_NAMES),) or not np.all(np.isfinite(q)):
        raise ValueError(f'need {len(JOINT_NAMES) - 1} or {len(JOINT_NAMES)} finite positions')
    return q


class SimArm:
    """
    Joint positions and velocities that move toward a desired position each tick.

    Each joint moves at most v_max * dt toward its desired position per step and stays inside
    its position limits, so a command faster than the arm can go simply arrives late.
    `time_scale` S divides the velocity limits: a gateway running with time scale S plays its
    chunks in S times their nominal duration (S < 1 is faster than real time), so the same
    motion then needs 1/S times the speed.
    """

    def __init__(self, initial: Sequence[float], time_scale: float = 1.0) -> None:
        self.position = np.clip(initial_state(initial), _LOWER, _UPPER)
        self.velocity = np.zeros(len(JOINT_NAMES))
        self.time_scale = time_scale

    @property
    def velocity_limits(self) -> np.ndarray:
        """Per-joint speed limits: rad/s for the arm, m/s for the finger joint."""
        return _VELOCITY / self.time_scale

    @property
    def position_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-joint (lower, upper) positions: rad for the arm, m for the finger joint."""
        return _LOWER.copy(), _UPPER.copy()

    @property
    def arm_position(self) -> np.ndarray:
        """Return the 7 arm joint positions (no gripper), as arm_model's kinematics want them."""
        return self.position[:-1]

    def tool_position(self) -> np.ndarray:
        """World position of the tool centre point."""
        return arm_model.tool_position(self.arm_position)

    def step(self, desired: np.ndarray | None, dt: float) -> None:
        """Advance by dt seconds toward `desired` (None: hold still)."""
        if desired is None or dt <= 0.0:
            self.velocity = np.zeros_like(self.position)
            return
        reach = self.velocity_limits * dt
        target = np.clip(desired, _LOWER, _UPPER)
        new = np.clip(self.position + np.clip(target - self.position, -reach, reach),
                      _LOWER, _UPPER)
        self.velocity = (new - self.position) / dt
        self.position = new

    def hold(self) -> None:
        """Stop dead where the arm is."""
        self.velocity = np.zeros_like(self.position)
