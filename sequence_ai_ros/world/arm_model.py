"""
The reference arm and scene shared by the simulated arm and the gateway's reference policies.

A DROID-like arm: a Franka Panda (7 revolute joints, modified DH parameters as published by
Franka) plus a gripper, standing at the origin of a 1 m x 1 m table. The simulated arm draws
this scene into its camera frames and the reference policies read those frames back, so both
sides must agree on geometry and colours; keeping them here makes that agreement one fact.
"""

from collections.abc import Sequence
import math

import numpy as np

# Joint positions as a list or an array (the world and the sim pass both).
JointValues = Sequence[float] | np.ndarray

JOINT_NAMES = tuple(f'panda_joint{i}' for i in range(1, 8))
GRIPPER_JOINT = 'panda_finger_joint1'

LOWER_LIMITS = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973])
UPPER_LIMITS = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973])
VELOCITY_LIMITS = np.array([2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61])
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
# The model's gripper value: 0 open .. 1 closed, as DROID policies are trained (the node's
# limits and the gateway use this). The Panda finger joint itself moves in metres:
GRIPPER_RANGE = (0.0, 1.0)
FINGER_OPEN_M = 0.04
FINGER_CLOSED_M = 0.0
# Franka Hand: up to 0.05 m/s per finger.
FINGER_SPEED_MPS = 0.05

# (a, d, alpha) per joint, Craig's convention; then the flange and the gripper's tool centre.
_DH = (
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -math.pi / 2),
    (0.0, 0.316, math.pi / 2),
    (0.0825, 0.0, math.pi / 2),
    (-0.0825, 0.384, -math.pi / 2),
    (0.0, 0.0, math.pi / 2),
    (0.088, 0.0, math.pi / 2),
)
_FLANGE_TO_TCP = 0.107 + 0.1034

# The table, seen top-down by the exterior camera: world x (forward) and y (left) in metres.
TABLE_X = (-0.1, 0.9)
TABLE_Y = (-0.5, 0.5)
# Where targets are placed: comfortably inside the reach, in front of the arm.
TARGET_X = (0.35, 0.65)
TARGET_Y = (-0.3, 0.3)
# The policy brings the tool centre to this height above a target.
HOVER_Z = 0.15

TABLE_RGB = (196, 178, 140)
TARGET_RGB = (220, 30, 30)
ARM_RGB = (70, 70, 80)
TOOL_RGB = (30, 170, 60)


def _dh(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    ca, sa, ct, st = math.cos(alpha), math.sin(alpha), math.cos(theta), math.sin(theta)
    return np.array([
        [ct, -st, 0.0, a],
        [st * ca, ct * ca, -sa, -d * sa],
        [st * sa, ct * sa, ca, d * ca],
        [0.0, 0.0, 0.0, 1.0],
    ])


def joint_positions_3d(q: JointValues) -> np.ndarray:
    """Positions of the base, each joint frame and the tool centre, shape (9, 3), in metres."""
    transform = np.eye(4)
    points = [transform[:3, 3].copy()]
    for (a, d, alpha), theta in zip(_DH, q):
        transform = transform @ _dh(a, d, alpha, float(theta))
        points.append(transform[:3, 3].copy())
    transform = transform @ _dh(0.0, _FLANGE_TO_TCP, 0.0, 0.0)
    points.append(transform[:3, 3].copy())
    return np.array(points)


def tool_position(q: JointValues) -> np.ndarray:
    """World position of the tool centre point for joint positions q (7 values)."""
    position: np.ndarray = joint_positions_3d(q)[-1]
    return position


def position_jacobian(q: JointValues, eps: float = 1e-6) -> np.ndarray:
    """d(tool position)/dq, shape (3, 7), by central differences (cheap at 7 joints)."""
    joints = np.asarray(q, dtype=float)
    jac = np.zeros((3, joints.size))
    for i in range(joints.size):
        step = np.zeros_like(joints)
        step[i] = eps
        jac[:, i] = (tool_position(joints + step) - tool_position(joints - step)) / (2 * eps)
    return jac


def clamp_to_limits(q: JointValues) -> np.ndarray:
    """Joint positions clipped into the arm's position limits."""
    clamped: np.ndarray = np.clip(np.asarray(q, dtype=float), LOWER_LIMITS, UPPER_LIMITS)
    return clamped


def world_to_table_uv(x: float, y: float) -> tuple[float, float]:
    """
    Table coordinates in [0, 1]^2 of a world point: u grows to the right (-y), v downward (-x).

    The exterior camera looks straight down with the arm's base at the bottom centre, so an image
    of the table alone maps u, v to pixels by scaling; padding or resizing only moves the table.
    """
    u = (TABLE_Y[1] - y) / (TABLE_Y[1] - TABLE_Y[0])
    v = (TABLE_X[1] - x) / (TABLE_X[1] - TABLE_X[0])
    return u, v


def table_uv_to_world(u: float, v: float) -> tuple[float, float]:
    """Inverse of world_to_table_uv."""
    y = TABLE_Y[1] - u * (TABLE_Y[1] - TABLE_Y[0])
    x = TABLE_X[1] - v * (TABLE_X[1] - TABLE_X[0])
    return x, y
