"""
A `--policy` plug-in for the operator-session gateway: the reference policy, telling its task.

The gateway imports this module (not the ROS harness), so it needs nothing but the gateway.
Each answer's `warnings` carries the instruction the request held; the node passes the
warnings on to its `~/chunks` topic, so a test there sees which task the gateway was asked for.
"""

from typing import Any

import numpy as np
from sequence_ai_ros.gateway.reference_policy import ReferencePolicy

PREFIX = 'instruction: '


class InstructionEchoPolicy(ReferencePolicy):
    """The reference policy's rows, with the request's instruction among the warnings."""

    def act(self, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> tuple[np.ndarray, list[str]]:
        rows, warnings = super().act(observation, options, rng)
        return rows, [*warnings, PREFIX + str(observation.get('instruction', ''))]


def make_echo_policy(profile: Any) -> InstructionEchoPolicy:
    """Make the plug-in for one catalogue profile (the factory the gateway is given)."""
    return InstructionEchoPolicy(profile)
