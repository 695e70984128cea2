"""
What an episode holds once read: the Recording the report, the demo and the export share.

Here, below the client and the demo, so record/ needs neither (demo.analysis re-exports it).
"""

from dataclasses import dataclass, field
from typing import Any

from sequence_ai_ros.world.arm_model import JOINT_NAMES

ARM_JOINTS = len(JOINT_NAMES)

Vector = tuple[float, ...]


@dataclass
class Recording:
    """What one run published, each sample stamped with time.monotonic() at receipt."""

    commands: list[tuple[float, Vector, Vector]] = field(default_factory=list)
    joint_states: list[tuple[float, Vector]] = field(default_factory=list)
    chunks: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    distances: list[tuple[float, float]] = field(default_factory=list)
    outcome: dict[str, Any] | None = None
    outcome_time: float | None = None
    warming_eta_s: float | None = None
    episode_message: str = ''
    # ERROR lines the simulated controllers logged (a command they rejected), as (name, text).
    controller_errors: list[tuple[str, str]] = field(default_factory=list)
    # The gripper's goals and failed goals so far (its own interface), from /diagnostics.
    gripper_goals: int = 0
    gripper_failures: int = 0
    # Holds with their reasons and failed requests, as an episode file records them.
    holds: list[tuple[float, str]] = field(default_factory=list)
    errors: list[tuple[float, str]] = field(default_factory=list)
    # How many of a command's leading values are arm joints (the rest: a gripper).
    arm_joints: int = ARM_JOINTS
    # What a command's values are when not joint positions (plain Python records the
    # actions act() was given: 'joint_velocity' ones are velocities), else ''.
    command_units: str = ''


def is_hold(velocities: tuple[float, ...]) -> bool:
    """Return whether a command is a hold (the node sends holds with all velocities zero)."""
    return bool(velocities) and all(v == 0.0 for v in velocities)
