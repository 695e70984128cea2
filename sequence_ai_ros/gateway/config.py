"""The gateway's settings, as one record that the CLI fills and the app factory reads."""

from collections.abc import Mapping
from dataclasses import dataclass, field

SCENARIOS = ('steady', 'heavy_tail', 'step', 'fast')
PROTOCOLS = ('v1', 'direct', 'both')
# The gateway reads its keys from here too; standard library only, so a client test process
# (Ubuntu 22.04's Python 3.10, no gateway requirements) can name it.
KEYS_ENV = 'SEQUENCE_AI_ROS_GATEWAY_KEYS'


# Model seconds, scaled like every other duration of the gateway.
KEEPALIVE_EVERY_S = 20.0
SEAT_TTL_S = 60.0
LEASE_TTL_S = 600.0
REQUEST_TIMEOUT_S = 300.0


@dataclass
class DirectSettings:
    """The direct protocol's knobs; durations are model seconds (scaled by `time_scale`)."""

    seats: int = 4
    queue: bool = False
    seat_ttl_s: float = SEAT_TTL_S
    lease_ttl_s: float = LEASE_TTL_S
    request_timeout_s: float = REQUEST_TIMEOUT_S
    worker_host: str = '127.0.0.1'
    worker_port: int = 0  # 0: an ephemeral port, named in the connect answer
    # The worker's address as robots reach it (a load balancer, a proxy), when not the bound
    # one; its TLS passes through unchanged, so the pinned certificate is still the worker's.
    worker_url: str | None = None

    def __post_init__(self) -> None:
        if self.seats < 1:
            raise ValueError('seats must be >= 1')
        for name in ('seat_ttl_s', 'lease_ttl_s', 'request_timeout_s'):
            if not getattr(self, name) > 0:
                raise ValueError(f'{name} must be > 0')
        if not 0 <= self.worker_port < 65536:
            raise ValueError('worker port must be 0 (any) or 1-65535')
        if self.worker_url is not None:
            self.worker_url = advertised_worker_url(self.worker_url)


def advertised_worker_url(url: str) -> str:
    """Return `url` without a trailing slash; ValueError unless it is https://host[:port]."""
    scheme, _, rest = url.strip().partition('://')
    host = rest.rstrip('/')
    if scheme.lower() != 'https' or not host or '/' in host or '@' in host:
        raise ValueError(f'--worker-url {url!r}: expected https://host[:port] (the client '
                         'trusts only the pinned TLS worker, at its root)')
    return f'https://{host}'


@dataclass
class GatewayConfig:
    """
    Everything `create_app` needs. Durations are model seconds; `time_scale` shrinks them.

    `keys` maps API key to credit; empty means auth is disabled.
    """

    host: str = '127.0.0.1'
    port: int = 8765
    time_scale: float = 1.0
    scenario: str = 'steady'
    step_after_s: float = 30.0
    latency_median_s: float | None = None
    cold_start_s: float | None = None
    idle_cold_s: float = 900.0
    start_warm: bool = False
    concurrency: int = 16
    max_body_bytes: int = 8 * 1024 * 1024
    body_timeout_s: float = 30.0
    keys: Mapping[str, int] = field(default_factory=dict)
    # Robot keys (seq_robot_...): the one deployment each may use on the direct protocol.
    robot_keys: Mapping[str, str] = field(default_factory=dict)
    seed: int = 0
    policy: str | None = None
    catalogue: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    keep_alive_s: int = 75
    log_level: str = 'info'
    # An openpi policy server (ws://host:port) serving the one catalogue model `openpi_model`.
    openpi: str | None = None
    openpi_model: str = 'pi05-droid'
    # Which wire fronts serve: the v1 /v1/act, the direct protocol (connect + worker), or both.
    protocol: str = 'both'
    direct: DirectSettings = field(default_factory=DirectSettings)
    # /v1/models without the robot deployments, as the hosted service lists none since 0.51:
    # a robot knows its deployment by name only, and its action space from its own settings.
    unlisted: bool = False

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f'protocol must be one of {PROTOCOLS}')
        if self.scenario not in SCENARIOS:
            raise ValueError(f'scenario must be one of {SCENARIOS}')
        if not self.time_scale > 0:
            raise ValueError('time_scale must be > 0')
        if self.concurrency < 1:
            raise ValueError('concurrency must be >= 1')
        if self.max_body_bytes < 1:
            raise ValueError('max_body_bytes must be >= 1')
        if not self.body_timeout_s > 0:
            raise ValueError('body_timeout_s must be > 0')
        if self.latency_median_s is not None and self.latency_median_s < 0:
            raise ValueError('latency_median_s must be >= 0')
        if self.openpi:
            if self.policy or self.time_scale != 1.0:
                raise ValueError('--openpi serves a real model in real time: not with --policy '
                                 'or --time-scale')
            # Its own time is the latency, and its server is up or not: nothing simulated.
            self.start_warm = True
            self.latency_median_s = self.latency_median_s or 0.0
            self.cold_start_s = self.cold_start_s or 0.0
