"""
A `--policy` plug-in that keeps its replica busy: the fleet bench's stamping policy, plus compute.

The gateway sleeps its simulated latency in the ingress, where Serve's autoscaler never sees
it; this policy's time is spent in the replica, as a real model's is, so its queue grows.
"""

import time
from typing import Any

from bench._fleet_policy import FleetPolicy

COMPUTE_S = 0.05


class BusyFleetPolicy(FleetPolicy):
    """FleetPolicy whose every call holds its replica for COMPUTE_S."""

    def act(self, observation: dict[str, Any], options: dict[str, Any], rng: Any) -> Any:
        """Compute for COMPUTE_S (a blocking sleep, as a model's forward pass), then stamp."""
        time.sleep(COMPUTE_S)
        return super().act(observation, options, rng)


def make_busy_fleet_policy(profile: Any) -> BusyFleetPolicy:
    """Make a BusyFleetPolicy: the factory named on the gateway's command line."""
    return BusyFleetPolicy(profile)
