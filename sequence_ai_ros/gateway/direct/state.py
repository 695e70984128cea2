"""What the control plane and the worker share: seats, episodes, timing, the worker address."""

from dataclasses import dataclass, field
from typing import Any

from sequence_ai_ros.gateway.catalogue import Catalogue, ModelProfile
from sequence_ai_ros.gateway.config import DirectSettings
from sequence_ai_ros.gateway.core import PolicyCore
from sequence_ai_ros.gateway.keys import KeyLedger

from .episodes import EpisodeBook
from .errors import DirectError
from .seats import SeatBook


@dataclass
class DirectState:
    """One gateway's direct-protocol state: both planes read and change it on one event loop."""

    core: PolicyCore
    ledger: KeyLedger
    settings: DirectSettings
    time_scale: float
    max_body_bytes: int
    body_timeout_s: float
    seats: SeatBook = field(init=False)
    episodes: EpisodeBook = field(default_factory=EpisodeBook)
    worker_url: str = ''
    fingerprint: str = ''
    draining: bool = False
    running: dict[str, float] = field(default_factory=dict)  # request id -> started
    latency_records: dict[str, int] = field(default_factory=dict)  # outcome -> records

    def __post_init__(self) -> None:
        scale = self.time_scale
        self.seats = SeatBook([p.id for p in self.core.catalogue.profiles], self.settings.seats,
                              self.settings.seat_ttl_s * scale, self.settings.lease_ttl_s * scale,
                              self.settings.queue)

    @property
    def catalogue(self) -> Catalogue:
        """Return the served catalogue."""
        return self.core.catalogue

    def scaled(self, seconds: float) -> float:
        """Return model seconds as wall seconds."""
        return seconds * self.time_scale

    def deployment(self, name: Any) -> ModelProfile:
        """Return the deployment a request names (bare name), else DirectError not_found."""
        if not isinstance(name, str) or not name:
            raise DirectError('invalid_request', 'model: expected a deployment name, '
                                                 'e.g. pi05-droid')
        profile = self.catalogue.get(name)
        if profile is None:
            known = ', '.join(p.name for p in self.catalogue.profiles)
            raise DirectError('not_found', f'no deployment named {name[:64]!r}; '
                                           f'the local ones are {known}',
                              details={'resource': 'deployment'})
        return profile

    def refuse_if_draining(self) -> None:
        """Raise `draining` while the gateway shuts down."""
        if self.draining:
            raise DirectError('draining', 'the local gateway is shutting down; '
                                          'connect again once it is back',
                              retry_after_s=1.0)

    def snapshot(self) -> dict[str, Any]:
        """Return the direct protocol's part of the local stats."""
        return {'worker_url': self.worker_url, 'draining': self.draining,
                'seats': self.seats.snapshot(), 'episodes': self.episodes.snapshot(),
                'acts_running': len(self.running), 'latency_records': dict(self.latency_records)}
