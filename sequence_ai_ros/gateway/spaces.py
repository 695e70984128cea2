"""
Expressing a planned joint trajectory in a profile's action space.

A plan is `targets` (n + 1 joint vectors, row 0 the joints at capture time, row i + 1 where
the arm should be one control period after step i) and the gripper per step. Step i is then:
absolute/position spaces: row i + 1; delta: row i + 1 - row i; velocity: that delta times the
served control rate (rad/s of wall time at the current --time-scale). The gripper is absolute
in every space. `from_action_space` is the inverse: the joint targets a run of actions reaches.
"""

import numpy as np
from sequence_ai_ros.contract.action_spaces import ABSOLUTE, DELTA, space_kind, VELOCITY


def to_action_space(space: str, targets: np.ndarray, gripper: np.ndarray,
                    control_hz: float) -> np.ndarray:
    """Return the (n, joints + 1) action rows for a plan in `space`."""
    steps = np.diff(targets, axis=0)
    kind = space_kind(space)
    if kind == ABSOLUTE:
        joints = targets[1:]
    elif kind == DELTA:
        joints = steps
    elif kind == VELOCITY:
        joints = steps * control_hz
    else:
        raise ValueError(f'unsupported action space {space!r}')
    return np.column_stack([joints, gripper])


def from_action_space(space: str, rows: np.ndarray, q0: np.ndarray,
                      control_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the joint targets (n + 1 rows, row 0 = q0) and gripper that `rows` amount to."""
    joints, gripper = rows[:, :q0.size], rows[:, q0.size]
    kind = space_kind(space)
    if kind == ABSOLUTE:
        return np.vstack([q0, joints]), gripper
    if kind == DELTA:
        steps = joints
    elif kind == VELOCITY:
        steps = joints / control_hz
    else:
        raise ValueError(f'unsupported action space {space!r}')
    return np.vstack([q0, q0 + np.cumsum(steps, axis=0)]), gripper
