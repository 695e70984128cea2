"""
Model actions to joint position targets (node/arm_output.py turns them into messages).

An action is ``joint_count`` values in the model's action space, then the gripper if the model
has one (the DROID convention: the gripper is an absolute position 0..1 in every space). Only
joint spaces are mapped; an end-effector or unknown space raises :class:`UnsupportedActionSpace`
so a wrong interpretation is never published.

Plain tuples, not numpy: for 8 values one action maps in ~1.2 us this way, ~4.5 us with
arrays (measured on an x86 desktop).
"""

from collections.abc import Sequence
from dataclasses import dataclass
import math

from sequence_ai_ros.contract.action_spaces import ABSOLUTE, DELTA, joint_space_kind, JOINT_SPACES

__all__ = ['Command', 'CommandMapper', 'UnsupportedActionSpace', 'supported_action_space']


class UnsupportedActionSpace(ValueError):
    """The model's action space is not one this node can turn into joint targets."""


def supported_action_space(space: str | None) -> bool:
    """Return True when :class:`CommandMapper` can map actions of this space."""
    return joint_space_kind(space) is not None


@dataclass(frozen=True)
class Command:
    """One control step: position targets and velocities, joints then the gripper."""

    positions: tuple[float, ...]
    velocities: tuple[float, ...]


class CommandMapper:
    """
    Turns each action into absolute targets, integrating delta and velocity spaces.

    Integration starts from :meth:`reset` (the measured positions) and continues from the last
    target, not from the measured state, so a lagging arm is not commanded to drift.
    """

    def __init__(self, action_space: str, joint_count: int, has_gripper: bool) -> None:
        kind = joint_space_kind(action_space)
        if kind is None:
            raise UnsupportedActionSpace(
                f'action space {action_space!r} cannot be commanded as joint positions; '
                f'supported: joint spaces named like {", ".join(JOINT_SPACES)}')
        if joint_count < 1:
            raise ValueError(f'joint_count must be >= 1, got {joint_count}')
        self.action_space = action_space
        self.kind = kind
        self.joint_count = joint_count
        self.has_gripper = has_gripper
        self._last: tuple[float, ...] | None = None

    @property
    def expected_dim(self) -> int:
        """Values per action and per measured vector: joints, then the gripper if any."""
        return self.joint_count + (1 if self.has_gripper else 0)

    @property
    def last_target(self) -> tuple[float, ...] | None:
        """Return the last commanded (or reset) positions; None before :meth:`reset`."""
        return self._last

    def reset(self, measured_positions: Sequence[float]) -> None:
        """Start integrating from where the arm is (episode start, and after every hold)."""
        self._start_from(measured_positions)

    def hold(self, measured_positions: Sequence[float]) -> Command:
        """Return a command to stay where the arm is, which also becomes the integration origin."""
        origin = self._start_from(measured_positions)
        return Command(origin, (0.0,) * len(origin))

    def preview(self, actions: Sequence[Sequence[float]], dt_s: float) -> list[Command]:
        """Return the commands `actions` would give after the last one, changing nothing."""
        saved = self._last
        try:
            return [self.command(action, dt_s) for action in actions]
        finally:
            self._last = saved

    def command(self, action: Sequence[float], dt_s: float) -> Command:
        """
        Return the targets for one action lasting ``dt_s`` seconds; updates the last target.

        Non-finite action values pass through so that the safety check reports them with the
        joint's name; check every command before publishing and :meth:`hold` on a rejection.
        """
        last = self._last
        if last is None:
            raise ValueError('CommandMapper.command() before reset(): no integration origin')
        if len(action) != self.expected_dim:
            raise ValueError(f'action has {len(action)} values, expected {self.expected_dim} '
                             f'({self._layout()}) for {self.action_space!r}')
        if not (dt_s > 0.0 and math.isfinite(dt_s)):
            raise ValueError(f'dt_s must be a positive finite duration, got {dt_s!r}')
        n = self.joint_count
        joints = [float(a) for a in action[:n]]
        if self.kind == ABSOLUTE:
            targets = joints
            velocities = [(t - p) / dt_s for t, p in zip(targets, last)]
        elif self.kind == DELTA:
            targets = [p + a for p, a in zip(last, joints)]
            velocities = [a / dt_s for a in joints]
        else:
            targets = [p + a * dt_s for p, a in zip(last, joints)]
            velocities = joints
        if self.has_gripper:
            gripper = float(action[n])
            targets.append(gripper)
            velocities.append((gripper - last[n]) / dt_s)
        self._last = tuple(targets)
        return Command(self._last, tuple(velocities))

    def _start_from(self, measured_positions: Sequence[float]) -> tuple[float, ...]:
        self._last = origin = self._vector(measured_positions, 'measured positions')
        return origin

    def _vector(self, values: Sequence[float], what: str) -> tuple[float, ...]:
        if len(values) != self.expected_dim:
            raise ValueError(f'{what} have {len(values)} values, expected {self.expected_dim} '
                             f'({self._layout()})')
        vector = tuple(float(v) for v in values)
        if not all(math.isfinite(v) for v in vector):
            raise ValueError(f'{what} are not all finite: {vector}')
        return vector

    def _layout(self) -> str:
        gripper = ' + gripper' if self.has_gripper else ''
        return f'{self.joint_count} joints{gripper}'
