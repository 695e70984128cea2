"""
The output-modes bench's `--policy` plug-in: the reference policy, its noise one curve in time.

The reference policy adds smooth AR(1) noise to its plan, correlated step to step (0.8), so
at 50 Hz it would be a rougher curve than at 15 Hz, and a rate comparison would measure the
noise rather than the output mode. This plug-in asks the reference policy for its plan
without noise, draws the reference policy's own noise (chunk_noise) on the 15 Hz grid of the
chunk, and adds it sampled at the model's rate from a Catmull-Rom curve through those 15 Hz
values: at 15 Hz exactly the reference policy's noise, at 50 Hz the same curve more finely
sampled. joint_velocity models only (the bench runs pi05-droid and its 50 Hz twin).
"""

from typing import Any

import numpy as np
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.reference_policy import chunk_noise, ReferencePolicy

REFERENCE_HZ = 15.0  # the grid the noise is drawn on: the reference policy's rate


class _Quiet:
    """Stands in for the random generator inside the reference policy: its noise is zero."""

    @staticmethod
    def standard_normal(shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape)


def catmull_rom(nodes: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Return the C1 cubic through `nodes` (rows at x = 0, 1, ...) sampled at `x`."""
    padded = np.vstack([2 * nodes[0] - nodes[1], nodes, 2 * nodes[-1] - nodes[-2]])
    i = np.clip(np.floor(x).astype(int), 0, len(nodes) - 2)
    u = (x - i)[:, None]
    p0, p1, p2, p3 = padded[i], padded[i + 1], padded[i + 2], padded[i + 3]
    m1, m2 = (p2 - p0) / 2, (p3 - p1) / 2
    return ((2 * u ** 3 - 3 * u ** 2 + 1) * p1 + (u ** 3 - 2 * u ** 2 + u) * m1
            + (-2 * u ** 3 + 3 * u ** 2) * p2 + (u ** 3 - u ** 2) * m2)


class RatePolicy:
    """The reference policy's plan, plus its noise as one curve in time at any rate."""

    def __init__(self, profile: ModelProfile) -> None:
        if profile.action_space != 'joint_velocity':
            raise ValueError(f'{profile.name}: the bench plug-in serves joint_velocity only')
        self.profile = profile
        self.reference = ReferencePolicy(profile)

    def act(self, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
        """Plan as the reference policy does, noise apart; then add the resampled noise."""
        rows, warnings = self.reference.act(observation, options, _Quiet())  # type: ignore
        if warnings:  # no target seen: the reference policy holds, noiselessly
            return rows, warnings
        steps, joints = rows.shape[0], rows.shape[1] - 1
        ratio = REFERENCE_HZ / self.profile.native_hz
        coarse = max(2, round(steps * ratio))
        # Row k = the noise on the target after k steps of the 15 Hz grid (none at capture).
        nodes = np.vstack([np.zeros(joints), chunk_noise(rng, coarse, joints)])
        offsets = np.vstack([np.zeros(joints),
                             catmull_rom(nodes, np.arange(1, steps + 1) * ratio)])
        # Noise on the targets (row i + 1 = after step i) is its difference on the velocities.
        rows = np.array(rows, dtype=float)
        rows[:, :joints] += np.diff(offsets, axis=0) * self.profile.control_hz
        return rows, warnings


def make_policy(profile: ModelProfile) -> RatePolicy:
    """Return the factory the bench names on the gateway's command line."""
    return RatePolicy(profile)
