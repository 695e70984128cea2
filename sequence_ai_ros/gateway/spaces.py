"""
Expressing a planned joint trajectory in a profile's action space.

A plan is `targets` (n + 1 joint vectors, row 0 the joints at capture time, row i + 1 where
the arm should be one control period after step i) and the gripper per step. Step i is then:
absolute/position spaces: row i + 1; delta: row i + 1 - row i; velocity: that delta times the
served control rate (rad/s of wall time at the current --time-scale). The gripper is absolute
in every space.
"""

import numpy as np


def to_action_space(space: str, targets: np.ndarray, gripper: np.ndarray,
                    control_hz: float) -> np.ndarray:
    """Return the (n, joints + 1) action rows for a plan in `space`."""
    steps = np.diff(targets, axis=0)
    if space in ('joint_absolute', 'joint_position'):
        joints = targets[1:]
    elif space == 'joint_delta':
        joints = steps
    elif space == 'joint_velocity':
        joints = steps * control_hz
    else:
        raise ValueError(f'unsupported action space {space!r}')
    return np.column_stack([joints, gripper])
