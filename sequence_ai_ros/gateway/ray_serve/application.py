"""
The Ray Serve application: one gateway ingress deployment over one policy deployment.

Everything the contract keeps state for (keys and credit, warm-up 503s, the FIFO gate per
model, validation) lives in the ingress, a single replica: one ledger, one queue, whether
one policy replica or twenty serve. The ingress is the gateway's own Starlette app
(`create_app`) built on its replica with a `RayBackend`, through `serve.ingress()`'s late-bound
`__serve_build_asgi_app__` (ray-project/ray, master, python/ray/serve/api.py `ingress`).
The policy deployment scales out: `replicas` fixed, or autoscaled up to `max_replicas` from
the ongoing requests per replica (`autoscaling_config.target_ongoing_requests`), each replica
taking at most `concurrency` calls (`max_ongoing_requests`) behind a bounded queue
(`max_queued_requests`).
"""

from dataclasses import dataclass
import json
import os
from typing import Any

from ray import serve
from ray.serve.handle import DeploymentHandle
from sequence_ai_ros.gateway.app import create_app, serving_for
from sequence_ai_ros.gateway.config import GatewayConfig
from starlette.types import ASGIApp

from .backend import RayBackend
from .loopback import keep_replica_server_on_node
from .replica import PolicyReplica

APP_NAME = 'sequence-ai-gateway'
INGRESS_NAME = 'gateway'
POLICY_NAME = 'policy'
# The ingress holds every open request (robots keep two in flight each): far above any fleet.
INGRESS_MAX_ONGOING = 4096
# Serve's own autoscaling knobs (ray-project/ray, master, python/ray/serve/config.py
# AutoscalingConfig: upscale_delay_s, downscale_delay_s, metrics_interval_s,
# look_back_period_s, ...) as a JSON object, over the defaults below; tests make them short.
AUTOSCALING_ENV = 'SEQUENCE_AI_RAY_AUTOSCALING'
# The bounds and the target come from the flags; the rest is Serve's to tune.
FLAG_KNOBS = frozenset({'min_replicas', 'initial_replicas', 'max_replicas'})


@dataclass(frozen=True)
class Scaling:
    """How the policy deployment scales, and where the cluster is."""

    replicas: int = 1
    max_replicas: int = 0  # > replicas: autoscale between the two
    address: str | None = None
    launcher_pid: int = 0
    # Per policy replica; a GPU cluster sets num_gpus here instead.
    actor_options: tuple[tuple[str, float], ...] = (('num_cpus', 0.0),)

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError('--replicas must be >= 1')
        if self.max_replicas and self.max_replicas < self.replicas:
            raise ValueError('--max-replicas must be >= --replicas')


class GatewayIngress:
    """The ingress deployment's class: the gateway app over a handle to the policy."""

    def __init__(self, policy: DeploymentHandle, config: GatewayConfig,
                 scaling: Scaling) -> None:
        keep_replica_server_on_node()
        self.policy, self.config, self.scaling = policy, config, scaling

    def __serve_build_asgi_app__(self) -> ASGIApp:
        """Build the gateway's app on this replica, its act path calling the policy replicas."""
        _, _, name = serving_for(self.config)
        scaling = self.scaling
        backend = RayBackend(self.policy, name, scaling.replicas, scaling.max_replicas,
                             scaling.address, scaling.launcher_pid)
        return create_app(self.config, backend)


def policy_options(config: GatewayConfig, scaling: Scaling) -> dict[str, Any]:
    """Return the policy deployment's options: replicas or autoscaling, and the bounded queue."""
    most = max(scaling.replicas, scaling.max_replicas)
    options: dict[str, Any] = {
        'name': POLICY_NAME,
        'max_ongoing_requests': config.concurrency,
        # The ingress's FIFO gate admits `concurrency` per replica, so this queue fills only
        # while a replica is being replaced; beyond it a call is answered 503 at once.
        'max_queued_requests': config.concurrency * most,
        'ray_actor_options': dict(scaling.actor_options),
    }
    if scaling.max_replicas > scaling.replicas:
        options['autoscaling_config'] = {
            'target_ongoing_requests': max(1, config.concurrency // 2),
            **autoscaling_overrides(os.environ.get(AUTOSCALING_ENV, '')),
            'min_replicas': scaling.replicas, 'initial_replicas': scaling.replicas,
            'max_replicas': scaling.max_replicas}
    else:
        options['num_replicas'] = scaling.replicas
    return options


def autoscaling_overrides(text: str) -> dict[str, Any]:
    """Parse the autoscaling knobs (a JSON object, or ''); ValueError naming what is wrong."""
    if not text.strip():
        return {}
    try:
        knobs = json.loads(text)
    except ValueError as error:
        raise ValueError(f'{AUTOSCALING_ENV} is not JSON: {error}') from None
    if not isinstance(knobs, dict):
        raise ValueError(f'{AUTOSCALING_ENV} must be a JSON object of autoscaling_config fields')
    fixed = FLAG_KNOBS & set(knobs)
    if fixed:
        raise ValueError(f'{AUTOSCALING_ENV}: {sorted(fixed)} come from --replicas and '
                         '--max-replicas')
    return knobs


def build_application(config: GatewayConfig, scaling: Scaling) -> serve.Application:
    """Bind the policy deployment and the ingress over it into one application."""
    policy = serve.deployment(PolicyReplica).options(**policy_options(config, scaling))
    ingress = serve.deployment(serve.ingress()(GatewayIngress)).options(
        name=INGRESS_NAME, num_replicas=1, max_ongoing_requests=INGRESS_MAX_ONGOING,
        ray_actor_options={'num_cpus': 0})
    return ingress.bind(policy.bind(config), config, scaling)
