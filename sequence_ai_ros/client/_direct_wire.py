"""
What the direct protocol's control plane answers, read once into plain types.

connect -> WorkerRoute (where the worker is, how to trust and authenticate to it, the lease,
the seat's keepalive and the only timing a deployment states); ready -> Readiness. A missing or
wrong field raises MalformedResponse: a half-read route is not one to send a secret down.
"""

from dataclasses import dataclass, field
import math
from typing import Any

from ._errors import MalformedResponse

# The lease is renewed this share of its TTL early, at least MIN and at most MAX seconds
# early: late enough not to renew on every act, early enough that a slow renewal still lands.
RENEW_SHARE = 0.2
RENEW_LEAD_MIN_S = 1.0
RENEW_LEAD_MAX_S = 30.0


def renew_after(ttl_s: float) -> float | None:
    """Return how many seconds after a connect its lease is renewed (None: it never expires)."""
    if not (math.isfinite(ttl_s) and ttl_s > 0):
        return None
    lead = min(RENEW_LEAD_MAX_S, max(RENEW_LEAD_MIN_S, ttl_s * RENEW_SHARE))
    return max(0.0, ttl_s - lead)


def _positive(body: dict[str, Any], name: str, kind: type = float) -> Any:
    value = body.get(name)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not (math.isfinite(value) and value > 0):
        return None
    return kind(value)


@dataclass(frozen=True)
class WorkerRoute:
    """One connect answer: the worker to talk to and the terms it is talked to on."""

    worker_url: str
    direct_secret: str = field(repr=False)
    fingerprint: str
    lease_epoch: Any = None
    lease_ttl_s: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    keepalive_every_s: float | None = None
    seat_ttl_s: float | None = None
    hz: float | None = None
    valid_len: int | None = None
    replan_at: int | None = None
    request_timeout_s: float | None = None

    @classmethod
    def from_connect(cls, body: Any) -> 'WorkerRoute':
        """Read a connect answer; raise MalformedResponse when it cannot be used."""
        if not isinstance(body, dict):
            raise MalformedResponse('/v1/act/connect: expected a JSON object')
        url, secret = body.get('worker_url'), body.get('direct_secret')
        if not (isinstance(url, str) and url.startswith('https://')):
            # The worker is reached over pinned TLS only: a plain URL would carry the secret
            # in the clear.
            raise MalformedResponse('/v1/act/connect: worker_url is not an https:// URL')
        if not (isinstance(secret, str) and secret):
            raise MalformedResponse('/v1/act/connect: no direct_secret')
        if body.get('tls', 'pinned') != 'pinned':
            raise MalformedResponse(f'/v1/act/connect: tls {body.get("tls")!r} is not '
                                    'supported (this client pins the worker certificate)')
        lease: dict[str, Any] = body['lease'] if isinstance(body.get('lease'), dict) else {}
        keepalive: dict[str, Any] = body['keepalive'] \
            if isinstance(body.get('keepalive'), dict) else {}
        params = body.get('params')
        return cls(
            worker_url=url.rstrip('/'), direct_secret=secret,
            fingerprint=str(body.get('cert_fingerprint') or ''),
            lease_epoch=lease.get('epoch'), lease_ttl_s=_positive(lease, 'ttl_s') or 0.0,
            params=dict(params) if isinstance(params, dict) else {},
            keepalive_every_s=_positive(keepalive, 'every_s'),
            seat_ttl_s=_positive(keepalive, 'seat_ttl_s'),
            hz=_positive(body, 'hz'), valid_len=_positive(body, 'action_chunk_valid_len', int),
            replan_at=_positive(body, 'action_chunk_replan_at', int),
            request_timeout_s=_positive(body, 'request_timeout_s'))


@dataclass(frozen=True)
class Readiness:
    """
    GET /v1/act/ready for this Policy's session: ready now, else when and why not.

    status is building | preparing | starting | running | queued; stage restoring | loading
    | waiting; queue_position is this robot's place in line when queued.
    """

    ready: bool
    eta_s: float | None = None
    status: str | None = None
    stage: str | None = None
    queue_position: int | None = None
    retry_after_s: float | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def queued(self) -> bool:
        """Return whether this robot waits in line for a seat."""
        return self.status == 'queued'

    @classmethod
    def from_wire(cls, body: dict[str, Any]) -> 'Readiness':
        """Read one ready answer (unknown fields stay in `raw`)."""
        eta = body.get('eta_s')
        position = body.get('queue_position')
        retry = body.get('retry_after_s')
        return cls(
            ready=body.get('ready') is True,
            eta_s=float(eta) if isinstance(eta, (int, float)) and not isinstance(eta, bool)
            else None,
            status=body.get('status') if isinstance(body.get('status'), str) else None,
            stage=body.get('stage') if isinstance(body.get('stage'), str) else None,
            queue_position=position if isinstance(position, int) else None,
            retry_after_s=float(retry) if isinstance(retry, (int, float))
            and not isinstance(retry, bool) else None,
            raw=body)
