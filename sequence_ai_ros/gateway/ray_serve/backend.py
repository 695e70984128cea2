"""
The Ray Serve backend of the act path: a DeploymentHandle to the policy deployment.

Ray Serve's router picks a replica per call and keeps at most `max_ongoing_requests` on each
(ray-project/ray, master, python/ray/serve/_private/router.py). A call that fails because its
replica died, or because the bounded queue is full (`max_queued_requests`:
serve/exceptions.py BackPressureError), is answered 503 with Retry-After: a transient status
the sequence-ai clients retry with a fresh observation. The ingress never retries a call
itself: a replica that died mid-call may have computed an answer, and a call is never run
twice behind the client's back (Ray actor tasks are at-most-once by default,
doc/source/ray-core/fault_tolerance/actors.rst).
"""

import logging
from typing import Any

import numpy as np
from ray import exceptions as ray_errors
from ray.serve import exceptions as serve_errors
from ray.serve.handle import DeploymentHandle
from sequence_ai_ros.gateway.catalogue import ModelProfile
from sequence_ai_ros.gateway.errors import ApiError
from sequence_ai_ros.gateway.policy_backend import Inference

LOG = logging.getLogger(__name__)
# The errors that mean "no replica answered this call": Serve's and Ray core's.
LOST = (ray_errors.RayActorError, ray_errors.ActorUnavailableError,
        serve_errors.ReplicaUnavailableError, serve_errors.DeploymentUnavailableError)


class RayBackend:
    """Run each inference on a replica of the policy deployment, through its handle."""

    def __init__(self, handle: DeploymentHandle, name: str, replicas: int,
                 max_replicas: int, address: str | None, launcher_pid: int) -> None:
        self.handle = handle
        self.name = name
        self.replicas = max(replicas, max_replicas)
        self._described = {'backend': 'ray', 'replicas': replicas, 'max_replicas': max_replicas,
                           'ray_address': address or 'local', 'launcher_pid': launcher_pid}

    async def infer(self, profile: ModelProfile, observation: dict[str, Any],
                    options: dict[str, Any], rng: np.random.Generator) -> Inference:
        """Run the call on a replica; a lost replica or a full queue is a typed 503."""
        try:
            answer = await self.handle.act.remote(profile.id, observation, options, rng)
        except serve_errors.BackPressureError:
            raise ApiError(503, f'every replica of {profile.id} is busy and its queue is '
                           'full; retry', {'Retry-After': '1'}) from None
        except LOST as error:
            LOG.warning('policy replica lost during a call to %s: %s', profile.id,
                        type(error).__name__)
            raise ApiError(503, f'the replica serving {profile.id} stopped before it answered;'
                           ' retry', {'Retry-After': '1'}) from None
        if isinstance(answer, Inference):
            return answer
        status, detail = answer
        raise ApiError(status, detail)

    def describe(self) -> dict[str, Any]:
        """Say that Ray Serve replicas run the policy, and where."""
        return dict(self._described)
