"""
The fleet bench's `--policy` plug-in: the reference policy's work, with a stamped gripper column.

Each client loop writes `fleet <client> <seq>` as its instruction, one seq per request in the
order it observes; the plug-in runs the reference policy on the frame (so the gateway does the
same work per call as usual) and writes `stamp(client, seq, step)` into the last column. The
client reads the stamp back from every action it executes: which loop, which observation and
which step of its chunk, so order, skips and repeats are checked on what was really played.
"""

from typing import Any

import numpy as np
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.reference_policy import ReferencePolicy
from sequence_ai_ros.harness.stamped_actions import read_instruction, stamp

PREFIX = 'fleet'


class FleetPolicy:
    """The reference policy's plan, with (loop, request, step) written into the last column."""

    def __init__(self, profile: ModelProfile) -> None:
        self.profile = profile
        self.reference = ReferencePolicy(profile)

    def act(self, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
        """Plan as the reference policy does, then stamp every step."""
        rows, warnings = self.reference.act(observation, options, rng)
        stamped = read_instruction(str(observation.get('instruction', '')), PREFIX)
        if stamped is not None:
            client, seq = stamped
            rows = np.array(rows, dtype=float)
            rows[:, -1] = [stamp(client, seq, i) for i in range(len(rows))]
        return rows, warnings


def make_fleet_policy(profile: ModelProfile) -> FleetPolicy:
    """Return the factory the bench names on the gateway's command line."""
    return FleetPolicy(profile)
