"""
The policy deployment's replica: the policies of every catalogue model, called one at a time.

Each replica builds the configured policy (`--policy`, else the reference one) once per model
with the same factory the in-process gateway uses, and runs `call_policy` on each request, so
a replica checks an answer exactly as the in-process worker pool does. A failure comes back
as a value (status, detail), never as an exception: Ray would wrap it in its own error type
and the ingress could no longer tell a misbehaving policy (500) from a dead replica (503).
"""

from typing import Any

import numpy as np
from sequence_ai_ros.gateway.app import serving_for
from sequence_ai_ros.gateway.config import GatewayConfig
from sequence_ai_ros.gateway.errors import ApiError
from sequence_ai_ros.gateway.policy_backend import call_policy, Inference

from .loopback import keep_replica_server_on_node

Failure = tuple[int, str]


class PolicyReplica:
    """One copy of the served policy, for every model in the catalogue."""

    def __init__(self, config: GatewayConfig) -> None:
        keep_replica_server_on_node()
        catalogue, factory, self.name = serving_for(config)
        self.profiles = {p.id: p for p in catalogue.profiles}
        self.policies = {model: factory(p) for model, p in self.profiles.items()}

    def act(self, model: str, observation: dict[str, Any], options: dict[str, Any],
            rng: np.random.Generator) -> Inference | Failure:
        """Run the model's policy on one validated call; a failure is (status, detail)."""
        try:
            return call_policy(self.policies[model], self.name, self.profiles[model],
                               observation, options, rng)
        except ApiError as error:
            return error.status, error.detail
